"""A worker's fetch-ahead on every backend: held jobs are leased and heartbeated, a held job
that is cancelled runs no job code, and a draining worker hands back what it holds without
running it, while a job that returns during the drain keeps its result."""

from __future__ import annotations

import threading

from tether import JobState
from tether.job import Lease
from tether.errors import JobCancelled
from tether.worker.executor import execute
from tests.procs import wait_until

S = JobState


def test_a_held_job_cancelled_before_its_slot_runs_no_job_code(app):
    ran = []

    @app.job("t")
    def t(ctx, payload):
        ran.append(payload)

    job = app.submit("t", {"n": 1})
    (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
    assert claim.started and app.get(job.id).state == S.RUNNING
    assert app.cancel(job.id).state == S.CANCELLING
    lease = Lease(job.id, claim.attempt)
    lease.signal(JobCancelled("cancelled"))  # what the worker's heartbeat reports
    assert execute(app, claim.job, lease, started=True) == S.CANCELLED
    assert ran == [] and app.get(job.id).state == S.CANCELLED


def test_a_draining_worker_hands_back_held_jobs_without_running_them(app):
    entered, release = threading.Event(), threading.Event()
    ran = []

    @app.job("gate", safe_to_retry=True)
    def gate(ctx, payload):
        ran.append(payload["n"])
        if payload["n"] == 0:
            entered.set()
            assert release.wait(30)
        return payload["n"]

    jobs = [app.submit("gate", {"n": i}) for i in range(6)]
    w = app.worker(concurrency=1, poll_interval=0.05)
    w.prefetch.observe(0.0)  # short jobs seen: hold as many ahead as allowed
    thread = threading.Thread(target=w.run, kwargs={"install_signals": False}, daemon=True)
    thread.start()
    try:
        assert entered.wait(30), "the first job never started"
        # The first job may start while the claim's other jobs are still being handed over.
        wait_until(lambda: w.busy == 6, timeout=30,
                   what="every job held: one running, five waiting for the slot")
        held = {lease.job_id for lease in w.leases()}
        assert held == {j.id for j in jobs}, "held jobs are among the heartbeat's leases"
        assert all(app.get(j.id).lease_owner == w.id for j in jobs)
        w.stop()
        release.set()
    finally:
        release.set()
        thread.join(30)
    assert not thread.is_alive()
    assert ran == [0], "no held job ran after the drain began"
    first = app.get(jobs[0].id)
    assert first.state == S.SUCCEEDED and first.result == 0
    for j in jobs[1:]:
        got = app.get(j.id)
        assert got.state == S.QUEUED and got.lease_owner is None
        assert app.events(j.id)[-1].kind == "handed_back"


def test_a_claim_that_comes_back_short_ends_the_claiming_until_a_wake_up(app):
    """A claim that got fewer jobs than it asked for found the queue drained: the loop waits
    for a wake-up instead of asking again while the job it got is starting."""
    release = threading.Event()

    @app.job("hold")
    def hold(ctx, payload):
        assert release.wait(30)

    w = app.worker(concurrency=4, poll_interval=30, batch=4)
    try:
        for _ in range(6):
            app.submit("hold", {})
        assert w.run_once() == 4 and not w._drained, "a full claim: there may be more"
        release.set()
        wait_until(lambda: w.busy == 0, timeout=30, what="the first four finished")
        assert w.run_once() == 2 and w._drained, "two of four: the queue is empty"
        wait_until(lambda: w.busy == 0, timeout=30, what="the last two finished")
    finally:
        release.set()
        w.stop()
        w._drain()


def test_the_heartbeat_leaves_a_fresh_outcome_to_its_commit(app, clock):
    """An outcome handed to the completer is not renewed while its commit is moments away
    (renewing would queue on that commit's row locks); one still uncommitted a third of a TTL
    later is renewed again, so a slow commit never lets its lease expire."""
    from tether.store.base import Outcome
    from tether.worker.completer import Completer
    from tether.worker.worker import Worker

    app.register("t", lambda ctx, payload: payload)
    jobs = [app.submit("t", {"n": i}) for i in range(2)]
    w = Worker(app, concurrency=2, lease_ttl=30, poll_interval=0.05)
    claims = app.store.claim(w.id, queues=None, limit=2, lease_ttl=30, start=True)
    (done, other) = [Lease(c.job.id, c.attempt) for c in claims]
    gate = threading.Event()
    w.completer.stop()
    w.completer = Completer(lambda items: (gate.wait(30), w.writes.finish_many(items))[1],
                            monotonic=w.clock.monotonic)
    with w._lock:  # the other job is still running in its slot
        w._running[other.job_id] = other
    try:
        w.completer.complete(done, Outcome(S.SUCCEEDED, result_json="1"))
        assert {l.job_id for l in w.leases()} == {done.job_id, other.job_id}
        assert [l.job_id for l in w.renewable()] == [other.job_id]
        clock.advance(10.01)
        assert {l.job_id for l in w.renewable()} == {done.job_id, other.job_id}
    finally:
        gate.set()
        w.completer.stop()
    assert app.get(done.job_id).state == S.SUCCEEDED
    assert done.job_id not in {l.job_id for l in w.leases()}
    assert [j.id for j in jobs] == sorted([done.job_id, other.job_id])
