"""Cancel at random moments (DESIGN §1.5, §9 "cancel overwritten by a later finish").

Whatever the timing -- between claim and start, during provider calls, at the instant the job
finishes or fails, or two cancels at once -- a job ends in exactly one terminal state, a cancel
that was acknowledged is never overwritten, no retry is scheduled for a cancelled job, and no
provider call is started after the cancel was acknowledged (a call already reserved may finish:
it is journaled and paid, which is what "cancel at a safe boundary" means).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tether import JobState, JobStateError
from tether.job import Lease
from tether.core.states import TERMINAL
from tether.providers.simulated import read_bill
from tether.store.base import Outcome
from tether.testing.invariants import describe, history_problems, run_checks
from tether.worker.executor import execute
from tests.procs import stop, wait_until
from tests.reliability.helpers import client, url_for, worker

S = JobState


@pytest.fixture
def app(backend, tmp_path, clock):
    a = client(url_for(backend, tmp_path), clock=clock)
    yield a
    a.close()


def _race(*fns):
    """Run ``fns`` in threads released together; each result is a value or the exception."""
    barrier = threading.Barrier(len(fns))
    results: list = [None] * len(fns)

    def run(i, fn):
        barrier.wait()
        try:
            results[i] = fn()
        except Exception as exc:  # noqa: BLE001 - part of the result
            results[i] = exc
    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def _terminal_events(app, job_id):
    return [e for e in app.events(job_id) if e.to_state in {str(s) for s in TERMINAL}]


OUTCOMES = {
    "succeeded": lambda: Outcome(S.SUCCEEDED, result_json='{"ok":true}'),
    "failed": lambda: Outcome(S.FAILED, error_code="boom", error_summary="bug"),
    "retry": lambda: Outcome(S.RETRY_WAIT, error_code="transient", error_summary="429",
                             delay_s=1.0),
    "budget": lambda: Outcome(S.PAUSED, error_code="budget_exhausted", error_summary="limit",
                              kind="budget_exhausted"),
}


def test_cancel_racing_the_jobs_own_finish_ends_in_one_terminal_state(app, clock):
    """Many jobs; each job's worker reports an outcome at the same instant an operator cancels
    it. An acknowledged cancel always wins; a refused cancel means the job had already ended."""
    rng = random.Random(9)
    kinds = Counter()
    for n in range(48):
        want = rng.choice(sorted(OUTCOMES))
        job = app.submit("quick", {"n": n})
        (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
        if not claim.started:
            app.store.start(job.id, claim.attempt)
        finished, cancelled = _race(
            lambda: app.store.finish(job.id, claim.attempt, OUTCOMES[want]()),
            lambda: app.cancel(job.id))
        if isinstance(cancelled, JobStateError):
            # the worker's outcome landed first and cannot be cancelled (succeeded, failed)
            assert finished in (S.SUCCEEDED, S.FAILED), (want, finished)
            kinds["finish first"] += 1
        else:
            assert not isinstance(cancelled, Exception), cancelled
            if isinstance(finished, Exception):
                raise finished
            kinds["cancel acknowledged"] += 1
            if cancelled.state == S.CANCELLING:  # the worker had not reported yet
                assert finished == S.CANCELLED, (want, finished)
        final = app.get(job.id)
        if not isinstance(cancelled, JobStateError):
            assert final.state == S.CANCELLED, (want, final.state)
        assert final.state in TERMINAL
        assert len(_terminal_events(app, job.id)) == 1
        assert not history_problems(final, app.events(job.id), app.attempts(job.id))
    # no retry is ever scheduled for a cancelled job, however long we wait
    clock.advance(3600)
    assert app.store.promote_due() == 0
    assert app.store.claim("w", queues=None, limit=100, lease_ttl=30) == []
    assert kinds["cancel acknowledged"] > 0


@pytest.mark.parametrize("where", ["queued", "leased", "running", "retry_wait", "paused"])
def test_two_cancels_at_once_one_is_acknowledged(app, where):
    for n in range(12):
        job = app.submit("quick", {"n": n})
        if where != "queued":
            (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
            if where in ("running", "retry_wait", "paused"):
                app.store.start(job.id, c.attempt)
            if where == "retry_wait":
                app.store.finish(job.id, c.attempt, OUTCOMES["retry"]())
            if where == "paused":
                app.store.finish(job.id, c.attempt, OUTCOMES["budget"]())
        first, second = _race(lambda: app.cancel(job.id), lambda: app.cancel(job.id))
        ok = [r for r in (first, second) if not isinstance(r, Exception)]
        refused = [r for r in (first, second) if isinstance(r, Exception)]
        assert len(ok) == 1 and len(refused) == 1, (first, second)
        assert isinstance(refused[0], JobStateError)
        assert [e.kind for e in app.events(job.id)].count("cancel") == 1
        state = app.get(job.id).state
        assert state == (S.CANCELLING if where in ("leased", "running") else S.CANCELLED)


def test_cancel_between_claim_and_start_runs_no_job_code(app, tmp_path):
    bill = tmp_path / "bill.jsonl"
    from tests.reliability import apps
    apps.sim.bill_path = bill
    for n in range(5):
        job = app.submit("calls", {"n": 3})
        (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=False)
        assert app.cancel(job.id).state == S.CANCELLING
        assert execute(app, c.job, Lease(job.id, c.attempt)) == S.CANCELLED
        assert app.get(job.id).state == S.CANCELLED
        assert app.journal(job.id) == [], "no call was even reserved"
    assert read_bill(bill) == []


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.slow
def test_cancels_at_random_moments_during_provider_calls(backend, tmp_path):
    """Real workers run jobs of concurrent simulated calls (some answered 429, so jobs also go
    through retry_wait); each job is cancelled at a random moment. The simulated provider's own
    bill and the log of call starts are checked against the moment each cancel was
    acknowledged."""
    url = url_for(backend, tmp_path)
    app = client(url)
    bill, calls_log = tmp_path / "bill.jsonl", tmp_path / "calls.jsonl"
    env = {"RELY_BILL": str(bill), "RELY_CALLS": str(calls_log), "RELY_LATENCY": "0.05,0.25",
           "RELY_TRANSIENT": "0.08"}
    jobs = app.submit_many([{"type": "calls", "payload": {"n": 30, "concurrency": 3}}
                            for _ in range(12)])
    workers = [worker(url, tmp_path, f"w{i}", concurrency=3, lease_ttl=5, env=env)
               for i in range(2)]
    rng = random.Random(4)
    acks: dict[int, tuple[float, set[str]]] = {}
    refused: list[int] = []
    try:
        for job in jobs:
            wait_until(lambda: any(c["job"] == job.id for c in _lines(calls_log))
                       or app.get(job.id).terminal, timeout=90, interval=0.01,
                       what=f"job {job.id} to start calling")
            time.sleep(rng.uniform(0.0, 1.0))
            try:
                app.cancel(job.id)
            except JobStateError:
                refused.append(job.id)
                continue
            acked_at = time.time()
            reserved = {e.key for e in app.journal(job.id)}
            acks[job.id] = (acked_at, reserved)
        wait_until(lambda: all(app.get(j.id).terminal for j in jobs), timeout=120,
                   interval=0.1, what="every job to end")
    finally:
        for w in workers:
            stop(w)
    assert acks, "no cancel landed while a job ran"
    starts = _lines(calls_log)
    billed = read_bill(bill)
    for job in jobs:
        final = app.get(job.id)
        if job.id in refused:
            assert final.state == S.SUCCEEDED
            continue
        assert final.state == S.CANCELLED, final
        acked_at, reserved = acks[job.id]
        events = app.events(job.id)
        cancel_event = next(e for e in events if e.kind == "cancel")
        after = events[events.index(cancel_event) + 1:]
        assert all(e.to_state in (None, "cancelled") for e in after), \
            f"job {job.id} moved on after the cancel: {[(e.kind, e.to_state) for e in after]}"
        assert not [e for e in after if e.kind in ("retry_wait", "leased")]
        late = [c for c in starts if c["job"] == job.id and c["event"] == "start"
                and c["ts"] > acked_at]
        assert {c["key"] for c in late} <= reserved, \
            f"job {job.id}: calls started after the cancel that were not reserved before it"
        assert len(late) <= 3, "more calls in flight than the job's concurrency"
        keys_billed = {b.key for b in billed if b.job_id == job.id}
        assert keys_billed <= reserved, f"job {job.id}: billed calls reserved after the cancel"
        # The bill's clock against the cancel event's: a billed call ends at most one
        # (simulated) latency after it started, and it started no later than the ack.
        slack = 0.25 + 5.0  # the longest latency, plus generous scheduling on a loaded machine
        for b in billed:
            if b.job_id == job.id:
                assert b.ts <= cancel_event.at.timestamp() + slack, (b, cancel_event)
    checks = run_checks(app, expected_ids=[j.id for j in jobs], bill_path=bill)
    assert all(c.ok for c in checks), describe(checks)
