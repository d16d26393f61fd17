"""Worker clocks off by minutes, forwards and backwards, change nothing (DESIGN §6, §9).

Leases, backoff and claim eligibility are judged by the store's clock: PostgreSQL's ``now()``,
or for SQLite the one machine's clock (every process on it shares that clock; the store never
takes a worker's). Two ways a worker's clock can be wrong are tried:

* its tether app runs on ``OffsetClock(±300 s)`` (both backends);
* its whole process has ``time.time`` shifted by ±300 s, as on a machine whose clock is off
  (PostgreSQL only: SQLite processes share one machine, hence one clock, by assumption).

Healthy workers keep their leases whatever their clocks say (no lease ever expires, nothing is
stolen), a backoff lasts what it says by the store's clock, and a dead worker's job -- even the
one whose clock runs ahead -- is taken over one lease TTL after it died, not minutes later.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from tether import JobState
from tether.testing.invariants import describe, run_checks
from tests.procs import stop, wait_until
from tests.reliability.helpers import client, url_for, worker

pytestmark = pytest.mark.slow
S = JobState
SKEW = 300.0
TTL = 1.5

MODES = [("sqlite", "RELY_CLOCK_OFFSET"), ("postgres", "RELY_CLOCK_OFFSET"),
         ("postgres", "RELY_SKEW_TIME")]


@pytest.mark.parametrize("backend_name,how", MODES,
                         ids=["sqlite-offset-clock", "postgres-offset-clock",
                              "postgres-skewed-time"])
def test_worker_clocks_off_by_minutes_change_nothing(backend_name, how, tmp_path):
    if backend_name == "postgres":
        from tests.conftest import require_postgres
        require_postgres()
    url = url_for(backend_name, tmp_path)
    app = client(url)

    def skewed(name: str, offset: float):
        return worker(url, tmp_path, name, concurrency=2, lease_ttl=TTL, poll=0.05,
                      env={how: str(offset)} if offset else None)

    # 1. A long job starts on the worker whose clock runs ahead, which then dies.
    victim = app.submit("steps", {"steps": 80, "step_s": 0.05})
    ahead = skewed("ahead", +SKEW)
    others = []
    try:
        wait_until(lambda: app.get(victim.id).state == S.RUNNING, timeout=60,
                   what="the long job to start on the fast-clock worker")
        lease_end = app.get(victim.id).lease_expires_at.timestamp()
        assert abs(lease_end - (time.time() + TTL)) < 30, "the lease was set by a worker clock"
        os.kill(ahead.pid, signal.SIGKILL)
        ahead.wait(10)
        killed_at = time.time()
        others = [skewed("behind", -SKEW), skewed("plain", 0)]
        wait_until(lambda: any(e.kind == "lease_expired" for e in app.events(victim.id)),
                   timeout=30, what="the dead fast-clock worker's lease to expire")
        expired = next(e for e in app.events(victim.id) if e.kind == "lease_expired")
        assert expired.at.timestamp() - killed_at < TTL + 20, "expiry waited on a worker clock"

        # 2. Healthy workers with clocks minutes apart: nothing expires, nothing is stolen,
        #    and a Retry-After of 2 s is 2 s of store time.
        ahead = skewed("ahead2", +SKEW)
        jobs = app.submit_many([{"type": "steps", "payload": {"steps": 40, "step_s": 0.05,
                                                              "stage_every": 10}}
                                for _ in range(6)])
        flaky = app.submit_many([{"type": "flaky", "payload": {"retry_after": 2.0}}
                                 for _ in range(3)])
        everything = [victim] + jobs + flaky
        wait_until(lambda: all(app.get(j.id).terminal for j in everything), timeout=120,
                   interval=0.2, what="every job to finish")
    finally:
        codes = [stop(w) for w in [ahead] + others]
    assert codes == [0] * len(codes)
    assert all(app.get(j.id).state == S.SUCCEEDED for j in everything)
    assert app.get(victim.id).attempt_count == 2
    for j in jobs + flaky:
        kinds = [e.kind for e in app.events(j.id)]
        assert "lease_expired" not in kinds, f"job {j.id} lost a healthy worker's lease: {kinds}"
    assert all(app.get(j.id).attempt_count == 1 for j in jobs)
    for j in flaky:
        events = app.events(j.id)
        wait = next(e for e in events if e.kind == "retry_wait")
        due = next(e for e in events if e.kind == "retry_due")
        assert wait.data["delay_s"] >= 2.0
        assert due.at.timestamp() - wait.at.timestamp() >= wait.data["delay_s"] - 0.01
        assert due.at.timestamp() - wait.at.timestamp() < wait.data["delay_s"] + 20
        assert app.get(j.id).attempt_count == 2
    workers = {a.worker_id.split(":")[1] for j in jobs for a in app.attempts(j.id)}
    assert len(workers) >= 2, "the skewed workers took part"
    checks = run_checks(app, expected_ids=[j.id for j in everything])
    assert all(c.ok for c in checks), describe(checks)
