"""A private PostgreSQL server restarts while workers run: every job finishes, none twice.

The restart happens mid-run: workers lose every pooled connection and their LISTEN
connection, statements in flight fail. They must reconnect, keep heartbeating within the
lease (TTL 10 s, longer than the outage), record the outcome of jobs whose side effect
already happened (so nothing runs a second time) and LISTEN again.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import psycopg
import pytest

from tether import JobState, Tether
from tether.errors import StoreError
from tests.apps.basic import app as basic_app
from tests.pg import PrivateServer, count_jobs, private_server_problem
from tests.procs import start_worker, stop, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

JOBS = 400
POLL = 10.0  # so slowly that a prompt pickup can only come from NOTIFY


def lines(path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def listeners(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity "
                            "WHERE query LIKE 'LISTEN %'").fetchone()[0]


@pytest.fixture(scope="module")
def server():
    if problem := private_server_problem():
        if os.environ.get("CI"):
            pytest.fail(f"{problem}; CI never skips PostgreSQL tests")
        pytest.skip(problem)
    with PrivateServer() as srv:
        yield srv


def test_workers_survive_a_postgresql_restart(server, tmp_path):
    out = tmp_path / "lines.txt"
    client = Tether(server.url)
    client.registry = basic_app.registry
    workers = [start_worker(server.url, concurrency=4, lease_ttl=10, poll=POLL,
                            log=tmp_path / f"w{i}.log") for i in range(2)]
    try:
        wait_until(lambda: listeners(server.url) == 2, timeout=30, what="both to LISTEN")
        # 20 ms each (8 slots: ~1 s in all), so the restart surely lands mid-run however fast
        # the workers drain; without it they finished all 400 before the stop in one run.
        client.submit_many([{"type": "append_line",
                             "payload": {"path": str(out), "n": i, "sleep_s": 0.02}}
                            for i in range(JOBS)])
        wait_until(lambda: lines(out) >= JOBS // 5, timeout=60, what="a fifth done")
        server.stop("fast")
        done_before = lines(out)
        server.start()
        wait_until(lambda: count_jobs(server.url, "succeeded") == JOBS,
                   timeout=90, interval=0.5, what="every job to succeed")

        wait_until(lambda: listeners(server.url) == 2, timeout=30, what="LISTEN again")
        t0 = time.monotonic()
        last = client.submit("append_line", {"path": str(out), "n": JOBS})
        wait_until(lambda: client.get(last.id).state == JobState.SUCCEEDED, timeout=POLL,
                   what="a new job to be picked up")
        picked_up_s = time.monotonic() - t0
    finally:
        codes = [stop(w) for w in workers]
        client.close()
    assert codes == [0, 0]
    assert done_before < JOBS, "the restart happened while jobs were running"
    counts = Counter(int(x) for x in out.read_text().split())
    assert sorted(counts) == list(range(JOBS + 1))
    assert set(counts.values()) == {1}, "no job ran twice"
    assert picked_up_s < POLL / 2, "woken by NOTIFY on the re-established LISTEN, not by a poll"
    logs = "".join((tmp_path / f"w{i}.log").read_text() for i in range(2))
    assert "LISTEN connection lost" in logs


def test_while_the_server_is_down_calls_fail_with_store_error_then_recover(server):
    app = Tether(server.url, retry_timeout=1.0, connect_timeout=1.0)
    try:
        job = app.submit("echo", {"x": 1})
        server.stop("fast")
        t0 = time.monotonic()
        with pytest.raises(StoreError):
            app.get(job.id)
        assert time.monotonic() - t0 < 10, "gave up after its retry window"
        server.start()

        def get():
            try:
                return app.get(job.id)
            except StoreError:
                return None  # the pool reconnects with its own backoff

        assert wait_until(get, timeout=30, what="the store to recover").payload == {"x": 1}
    finally:
        app.close()
