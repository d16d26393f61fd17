"""Real worker processes on one SQLite file: exactly-once side effects, crashes, zombies, drains."""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from tether import JobState, Tether
from tests.apps.basic import app as basic_app
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def client(sqlite_url):
    a = Tether(sqlite_url)
    a.registry = basic_app.registry  # same job types as the workers, so submit validates them
    yield a
    a.close()


def test_two_workers_process_1000_jobs_each_side_effect_exactly_once(client, sqlite_url, tmp_path):
    out = tmp_path / "lines.txt"
    client.submit_many([{"type": "append_line", "payload": {"path": str(out), "n": i}}
                        for i in range(1000)])
    workers = [start_worker(sqlite_url, concurrency=4, log=tmp_path / f"w{i}.log")
               for i in range(2)]
    try:
        wait_until(lambda: len(client.list(state="succeeded", limit=1000)) == 1000,
                   timeout=240, interval=0.5, what="1000 jobs to succeed")
    finally:
        codes = [stop(w) for w in workers]
    assert codes == [0, 0]
    counts = Counter(int(x) for x in out.read_text().split())
    assert sorted(counts) == list(range(1000))
    assert set(counts.values()) == {1}
    owners = Counter(a.worker_id for j in client.list(limit=1000) for a in client.attempts(j.id))
    assert len(owners) == 2, "both workers took part"
    assert all(j.attempt_count == 1 for j in client.list(limit=1000))


def test_sigkilled_worker_job_is_taken_over_after_lease_expiry(client, sqlite_url, tmp_path):
    out = tmp_path / "marker"
    job = client.submit("slow_marker", {"path": str(out), "seconds": 1.5})
    a = start_worker(sqlite_url, concurrency=1, lease_ttl=1.5, log=tmp_path / "a.log")
    wait_until(lambda: (tmp_path / "marker.started").exists(), what="job to start on A")
    os.kill(a.pid, signal.SIGKILL)
    a.wait(5)
    assert client.get(job.id).state == JobState.RUNNING
    b = start_worker(sqlite_url, concurrency=1, lease_ttl=1.5, log=tmp_path / "b.log")
    try:
        done = wait_until(lambda: client.get(job.id).terminal and client.get(job.id),
                          timeout=30, what="takeover to finish")
    finally:
        stop(b)
    assert done.state == JobState.SUCCEEDED and done.attempt_count == 2
    assert done.result == {"pid": b.pid}
    kinds = [e.kind for e in client.events(job.id)]
    assert "lease_expired" in kinds and kinds[-1] == "succeeded"
    attempts = client.attempts(job.id)
    assert [x.outcome for x in attempts] == ["lease_expired", "succeeded"]
    assert out.read_text().split() == [str(b.pid)], "only the second attempt finished"


def test_sigstopped_worker_cannot_write_after_takeover(client, sqlite_url, tmp_path):
    out = tmp_path / "marker"
    job = client.submit("slow_marker", {"path": str(out), "seconds": 1.0})
    zombie = start_worker(sqlite_url, concurrency=1, lease_ttl=1.0, log=tmp_path / "z.log")
    wait_until(lambda: (tmp_path / "marker.started").exists(), what="job to start")
    os.kill(zombie.pid, signal.SIGSTOP)
    healthy = start_worker(sqlite_url, concurrency=1, lease_ttl=1.0, log=tmp_path / "h.log")
    try:
        wait_until(lambda: client.get(job.id).state == JobState.SUCCEEDED, timeout=30,
                   what="takeover to succeed")
        history = client.events(job.id)
        os.kill(zombie.pid, signal.SIGCONT)
        # The zombie's job code resumes, finishes its sleep and tries to report success.
        wait_until(lambda: len(out.read_text().split()) == 2, timeout=30,
                   what="zombie to reach its finish")
        wait_until(lambda: b"lease" in (tmp_path / "z.log").read_bytes(), timeout=30,
                   what="zombie to notice its lost lease")
    finally:
        os.kill(zombie.pid, signal.SIGCONT)
        stop(zombie)
        stop(healthy)
    final = client.get(job.id)
    assert final.state == JobState.SUCCEEDED and final.result == {"pid": healthy.pid}
    assert client.events(job.id) == history, "the zombie appended nothing"
    assert [a.outcome for a in client.attempts(job.id)] == ["lease_expired", "succeeded"]


def test_sigterm_drains_hands_back_and_exits_zero(client, sqlite_url, tmp_path):
    job = client.submit("boundary_loop", {"steps": 100000, "step_s": 0.01})
    w = start_worker(sqlite_url, concurrency=1, lease_ttl=30, log=tmp_path / "w.log")
    wait_until(lambda: client.get(job.id).state == JobState.RUNNING, what="job to run")
    os.kill(w.pid, signal.SIGTERM)
    assert w.wait(20) == 0
    j = client.get(job.id)
    assert j.state == JobState.QUEUED and j.lease_owner is None
    assert client.events(job.id)[-1].kind == "handed_back"
    assert client.workers() == []


def test_retry_with_backoff_then_success_across_real_worker(client, sqlite_url, tmp_path):
    job = client.submit("flaky", {"succeed_on": 2})
    w = start_worker(sqlite_url, concurrency=1, log=tmp_path / "w.log")
    try:
        done = wait_until(lambda: client.get(job.id).terminal and client.get(job.id),
                          timeout=30, what="flaky job to finish")
    finally:
        stop(w)
    assert done.state == JobState.SUCCEEDED and done.result == {"attempt": 2}
    states = [e.to_state for e in client.events(job.id) if e.to_state]
    assert "retry_wait" in states


def test_a_worker_process_switches_threads_every_millisecond(client, sqlite_url, tmp_path):
    job = client.submit("switch_interval")
    w = start_worker(sqlite_url, concurrency=1, log=tmp_path / "w.log")
    try:
        wait_until(lambda: client.get(job.id).state == JobState.SUCCEEDED, what="job to run")
    finally:
        assert stop(w) == 0
    assert client.get(job.id).result == {"s": 0.001}
