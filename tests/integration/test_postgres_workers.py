"""Real worker processes on PostgreSQL: exactly-once side effects, crash takeover, clock skew."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter

import pytest

from tether import JobState, Tether
from tests.procs import CHILD_PYTHONPATH
from tests.apps.basic import app as basic_app
from tests.pg import count_jobs
from tests.procs import ROOT, start_worker, stop, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def client(pg_url):
    a = Tether(pg_url)
    a.registry = basic_app.registry  # the workers' job types, so submit validates them
    yield a
    a.close()


def skewed_worker(url: str, offset_s: float, log, *, lease_ttl: float) -> subprocess.Popen:
    """A worker process whose wall clock (time.time) is off by ``offset_s``."""
    code = (f"import time; _t = time.time; time.time = lambda: _t() + {offset_s!r}; "
            "from tether.worker.__main__ import main; "
            f"main(['--app', 'tests.apps.basic:app', '--database-url', {url!r}, "
            f"'--concurrency', '1', '--lease-ttl', '{lease_ttl}', '--poll-interval', '0.05'])")
    out = open(log, "ab")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=out, stderr=out,
                            env=dict(os.environ, PYTHONPATH=CHILD_PYTHONPATH))


def test_four_workers_process_2000_jobs_each_side_effect_exactly_once(client, pg_url, tmp_path):
    out = tmp_path / "lines.txt"
    client.submit_many([{"type": "append_line", "payload": {"path": str(out), "n": i}}
                        for i in range(2000)])
    workers = [start_worker(pg_url, concurrency=4, lease_ttl=10, log=tmp_path / f"w{i}.log")
               for i in range(4)]
    try:
        wait_until(lambda: count_jobs(pg_url, "succeeded") == 2000,
                   timeout=100, interval=0.5, what="2000 jobs to succeed")
    finally:
        codes = [stop(w) for w in workers]
    assert codes == [0, 0, 0, 0]
    counts = Counter(int(x) for x in out.read_text().split())
    assert sorted(counts) == list(range(2000))
    assert set(counts.values()) == {1}
    jobs = client.list(limit=2000)
    assert all(j.attempt_count == 1 for j in jobs)
    owners = Counter(a.worker_id for j in jobs for a in client.attempts(j.id))
    assert len(owners) == 4, f"all four workers took part: {owners}"


def test_sigkilled_worker_job_is_taken_over_after_lease_expiry(client, pg_url, tmp_path):
    out = tmp_path / "marker"
    job = client.submit("slow_marker", {"path": str(out), "seconds": 1.0})
    a = start_worker(pg_url, concurrency=1, lease_ttl=1.5, log=tmp_path / "a.log")
    wait_until(lambda: (tmp_path / "marker.started").exists(), what="job to start on A")
    os.kill(a.pid, signal.SIGKILL)
    a.wait(5)
    assert client.get(job.id).state == JobState.RUNNING
    b = start_worker(pg_url, concurrency=1, lease_ttl=1.5, log=tmp_path / "b.log")
    try:
        done = wait_until(lambda: client.get(job.id).terminal and client.get(job.id),
                          timeout=30, what="takeover to finish")
    finally:
        stop(b)
    assert done.state == JobState.SUCCEEDED and done.attempt_count == 2
    started = (tmp_path / "marker.started").read_text().split()
    assert started == [str(a.pid), str(b.pid)]
    assert out.read_text().split() == [str(b.pid)]
    first, second = client.attempts(job.id)
    assert first.outcome == "lease_expired" and second.outcome == "succeeded"
    assert "lease_expired" in [e.kind for e in client.events(job.id)]


def test_worker_clock_skew_can_neither_keep_nor_steal_leases(client, pg_url, tmp_path):
    """Leases are written and judged by the database clock. A worker an hour ahead would
    otherwise hold a lease for an hour after dying; one an hour behind would find every
    other worker's lease long expired and steal it."""
    ahead = skewed_worker(pg_url, +3600, tmp_path / "ahead.log", lease_ttl=1.5)
    out = tmp_path / "kept"
    kept = client.submit("slow_marker", {"path": str(out), "seconds": 1.0})
    wait_until(lambda: (tmp_path / "kept.started").exists(), what="job to start on the fast clock")
    lease_end = client.get(kept.id).lease_expires_at.timestamp()
    assert abs(lease_end - client.store.now()) < 60, "the lease was not set by the worker's clock"
    os.kill(ahead.pid, signal.SIGKILL)
    ahead.wait(5)

    behind = skewed_worker(pg_url, -3600, tmp_path / "behind.log", lease_ttl=1.5)
    try:
        done = wait_until(lambda: client.get(kept.id).terminal and client.get(kept.id),
                          timeout=30, what="the dead fast-clock worker's job to be taken over")
        assert done.state == JobState.SUCCEEDED and done.attempt_count == 2

        ahead = skewed_worker(pg_url, +3600, tmp_path / "ahead2.log", lease_ttl=1.5)
        out2 = tmp_path / "held"
        held = client.submit("slow_marker", {"path": str(out2), "seconds": 3.0})
        done = wait_until(lambda: client.get(held.id).terminal and client.get(held.id),
                          timeout=30, what="the long job to finish")
    finally:
        codes = [stop(w) for w in (behind, ahead)]
    assert codes == [0, 0]
    assert done.state == JobState.SUCCEEDED and done.attempt_count == 1, (
        "a worker running a long job keeps its lease by heartbeats, whatever the clocks say")
    assert len((tmp_path / "held.started").read_text().split()) == 1
