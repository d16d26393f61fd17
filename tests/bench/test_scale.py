"""W9 (scale-out on PostgreSQL) in its tiny mode, and the pg_stat_activity sampler it relies on."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
import time
import uuid

import psycopg
import pytest

from bench import plot
from bench.backends import drop_pg_database, fresh_pg_database, pg_problem
from bench.pgactivity import ActivitySampler
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(pg_problem() is not None, reason="PostgreSQL does not answer")


@pytest.mark.timeout(120)
def test_quick_w9_two_workers_drain_with_claim_latency_and_bounded_connections(tmp_path):
    out = tmp_path / "w9.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--quiet", "--only", "W9",
         "--backend", "sqlite,postgres", "--no-ceiling", "--set", "scale_workers=2",
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["errors"] == []
    assert res["workloads"]["W9"]["sqlite"] == {"skipped": "W9 runs on PostgreSQL only"}
    w9 = res["workloads"]["W9"]["postgres"]
    pool = w9["pool"]
    assert pool["per_worker"] == pool["pool_max_size"] + 1 and pool["pool_max_size"] >= 1
    assert w9["marker_priority"] < w9["bulk_priority"]  # lower runs first: markers jump the queue
    assert list(w9["steps"]) == ["n2"]
    run = w9["steps"]["n2"]["runs"][0]
    jobs = res["meta"]["sizes"]["scale_jobs"]
    assert "error" not in run, run
    assert run["workers"] == 2 and run["concurrency"] == 32
    assert run["done"] == run["jobs"] == jobs and not run["capped"]
    assert run["jobs_per_s"] > 0
    # claim latency under load: markers started while the bulk load drained
    assert run["markers"] >= 1 and run["markers_lost"] == 0
    assert run["pickup_p50_ms"] > 0 and run["pickup_p99_ms"] >= run["pickup_p50_ms"]
    assert run["to_claim_p50_ms"] is not None and run["held_p50_ms"] is not None
    # pg_stat_activity sampled during the drain; every worker seen (pool + LISTEN), none over
    assert run["activity_samples"] > 0 and run["activity"]["errors"] == []
    assert run["connection_bound"] == 2 * pool["per_worker"]
    assert 2 * 2 <= run["max_worker_connections"] <= run["connection_bound"]
    assert run["max_connections"] >= run["max_worker_connections"]
    assert 0 < run["cpu_busy_pct"] <= 100
    md = plot.table(res)
    assert "| 2 x 32 |" in md and f"= workers x {pool['per_worker']}." in md
    if importlib.util.find_spec("matplotlib"):
        svg = plot.plot(res, tmp_path / "scale.svg")
        assert svg.read_text().lstrip().startswith("<?xml")


def _caught_waiting(held: str, waiting: str) -> dict:
    """The sampler's summary while ``waiting`` waits for the transaction that ran ``held``."""
    name = f"w9lock_{uuid.uuid4().hex[:6]}"
    url = fresh_pg_database(name)
    dbname = f"tether_bench_{name}"
    holder = psycopg.connect(url, autocommit=True)
    sampler = ActivitySampler(dbname, worker_app="blocked-one", interval=0.01)
    try:
        holder.execute("CREATE TABLE w9_probe (id int PRIMARY KEY, v int)")
        holder.execute("INSERT INTO w9_probe VALUES (1, 0)")
        holder.execute("BEGIN")
        holder.execute(held)

        def blocked() -> None:
            with psycopg.connect(url, autocommit=True, application_name="blocked-one") as c:
                try:
                    c.execute(waiting)
                except psycopg.errors.UniqueViolation:
                    pass  # only if the holder committed

        waiter = threading.Thread(target=blocked)
        waiter.start()
        sampler.start()
        deadline = time.monotonic() + 20
        while sampler.lock_samples < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        got = sampler.stop()  # before the holder ends: no sample may catch the wait ending
        holder.execute("ROLLBACK")
        waiter.join(10)
    finally:
        sampler.stop()
        holder.close()
        drop_pg_database(name)
    return got


@pytest.mark.timeout(60)
def test_sampler_reports_a_backend_waiting_on_a_row_lock():
    got = _caught_waiting("UPDATE w9_probe SET v = 1 WHERE id = 1",
                          "UPDATE w9_probe SET v = 2 WHERE id = 1")
    assert got["lock_wait_samples"] >= 3 and got["max_lock_waiters"] == 1
    top = got["lock_waits_top"][0]
    assert top["wait_event"] == "transactionid"
    assert top["query"] == "UPDATE w9_probe SET v = 2 WHERE id = 1"
    assert top["count"] >= 3 and top["max_running_s"] > 0
    held = got["blockers_top"][0]  # the holder sits idle in its transaction after its UPDATE
    assert held["waiter"] == top["query"] and held["count"] == top["count"]
    assert held["holder"] == "(idle in transaction) UPDATE w9_probe SET v = 1 WHERE id = 1"
    assert " <- idle in tx after `UPDATE w9_probe SET v = 1" in plot._top_holders(
        {"runs": [{"activity": got}]})
    assert got["max_worker_connections"] == 1 and got["max_connections"] == 2
    where = got["waits_where"][0]
    assert where["waiter"] == top["query"] and where["count"] == top["count"]
    assert where["locks"] == "row lock in w9_probe; awaits transactionid"


@pytest.mark.timeout(60)
def test_sampler_tells_a_uniqueness_wait_from_a_row_wait():
    """A second insert of a key whose first insert has not committed waits for that
    transaction too, but holds no row's tuple lock: the wait is in the index."""
    got = _caught_waiting("INSERT INTO w9_probe VALUES (2, 0)",
                          "INSERT INTO w9_probe VALUES (2, 1)")
    top = got["lock_waits_top"][0]
    assert top["wait_event"] == "transactionid" and top["count"] >= 3
    assert got["waits_where"][0] == {"waiter": "INSERT INTO w9_probe VALUES (2, 1)",
                                     "locks": "awaits transactionid", "count": top["count"]}
