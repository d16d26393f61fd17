"""A provider outage (DESIGN §3, §9 "retry storms").

The simulated provider answers every call 503 with Retry-After for a few seconds (its
``outage`` hook), then recovers. The calls made during the outage stay bounded and jittered,
no job calls again before the Retry-After it was given, every job finishes, and nothing is
spent for the refused calls (the provider did not bill them).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from tether import JobState
from tether.providers.simulated import read_bill
from tether.testing.invariants import describe, run_checks
from tests.procs import stop, wait_until
from tests.reliability.helpers import client, url_for, worker

pytestmark = pytest.mark.slow
S = JobState
RETRY_AFTER = 0.5
OUTAGE_S = 3.0


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_outage_with_retry_after_then_recovery(backend, tmp_path):
    url = url_for(backend, tmp_path)
    app = client(url)
    bill, calls_log, outage = (tmp_path / "bill.jsonl", tmp_path / "calls.jsonl",
                               tmp_path / "outage")
    outage.write_text(str(RETRY_AFTER))
    env = {"RELY_BILL": str(bill), "RELY_CALLS": str(calls_log), "RELY_OUTAGE": str(outage),
           "RELY_LATENCY": "0.01"}
    jobs = app.submit_many([{"type": "calls", "payload": {"n": 4}} for _ in range(10)])
    workers = [worker(url, tmp_path, f"w{i}", concurrency=5, lease_ttl=10, env=env)
               for i in range(2)]
    try:
        wait_until(lambda: any(c["event"] == "refused" for c in _lines(calls_log)), timeout=60,
                   what="the first refused call")
        began = time.time()
        time.sleep(OUTAGE_S)  # the outage lasts this long (the condition under test)
        outage.unlink()
        ended = time.time()
        wait_until(lambda: all(app.get(j.id).terminal for j in jobs), timeout=120,
                   interval=0.2, what="every job to finish after the outage")
    finally:
        for w in workers:
            stop(w)

    assert all(app.get(j.id).state == S.SUCCEEDED for j in jobs)
    log = _lines(calls_log)
    refused = [c for c in log if c["event"] == "refused"]
    assert refused and all(c["status"] == 503 and c["retry_after"] == RETRY_AFTER
                           for c in refused)

    # Retry-After respected: after a refusal the job makes no call for RETRY_AFTER seconds.
    by_job: dict[int, list[dict]] = defaultdict(list)
    for c in log:
        by_job[c["job"]].append(c)
    for job_id, entries in by_job.items():
        entries.sort(key=lambda c: c["ts"])
        for i, c in enumerate(entries):
            if c["event"] != "refused":
                continue
            later = [d for d in entries[i + 1:] if d["event"] == "start"]
            if later:
                gap = later[0]["ts"] - c["ts"]
                assert gap >= RETRY_AFTER - 0.01, f"job {job_id} called again after {gap:.3f}s"

    # Bounded: no job is refused more often than Retry-After allows over the outage.
    window = ended - began + 2 * RETRY_AFTER
    for job_id, entries in by_job.items():
        n = sum(1 for c in entries if c["event"] == "refused")
        assert n <= window / RETRY_AFTER + 1, f"job {job_id}: {n} refused calls in {window:.1f}s"
    assert len(refused) <= len(jobs) * (window / RETRY_AFTER + 1)

    # Jitter: the engine's backoff delays are not one synchronized value, and never below
    # the Retry-After they were given.
    delays = [e.data["delay_s"] for j in jobs for e in app.events(j.id) if e.kind == "retry_wait"]
    assert delays and min(delays) >= RETRY_AFTER
    assert len({round(d, 3) for d in delays}) > 1 and max(delays) > RETRY_AFTER

    # No spend for refused calls: every ledger row is a billed call, confirmed, and the
    # refused keys' journal entries cost nothing.
    billed = read_bill(bill)
    for j in jobs:
        rows = app.ledger(j.id)
        mine = [b for b in billed if b.job_id == j.id]
        assert len(rows) == len(mine) == 4 and all(r.confirmed for r in rows)
        assert sum((r.cost_usd for r in rows), Decimal(0)) == sum((b.cost_usd for b in mine),
                                                                 Decimal(0))
        assert app.get(j.id).budget.used.spent_usd == sum((b.cost_usd for b in mine), Decimal(0))
        assert app.get(j.id).budget.used.reserved_usd == 0
    checks = run_checks(app, expected_ids=[j.id for j in jobs], bill_path=bill)
    assert all(c.ok for c in checks), describe(checks)


def test_a_refused_call_stops_the_calls_not_yet_started_in_a_map(tmp_path, clock):
    """Within one attempt, a 503 with Retry-After stops the job's remaining calls: ``ctx.map``
    starts no item after one failed (the ones already running finish and are journaled)."""
    from tether import Tether, TransientError
    from tether.job import Lease
    from tether.worker.executor import execute

    app = Tether(f"sqlite:///{tmp_path}/t.db", clock=clock)
    started: list[int] = []

    @app.job("fan_out")
    def fan_out(ctx, payload):
        def one(i):
            started.append(i)
            if i == 2:
                raise TransientError("overloaded (503)", status=503, retry_after=5)
            return i
        return ctx.map(one, range(20), concurrency=1)

    job = app.submit("fan_out", {})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
    assert execute(app, c.job, Lease(job.id, c.attempt), started=c.started) == S.RETRY_WAIT
    assert started == [0, 1, 2]
    assert app.get(job.id).run_after.timestamp() >= clock.time() + 5
