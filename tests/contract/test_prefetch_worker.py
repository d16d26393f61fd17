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
    lease = Lease(job.id, claim.token)
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
