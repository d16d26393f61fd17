"""The claim's plan does not depend on the planner's statistics: right after a bulk load into
a table PostgreSQL has never analyzed, a claim still walks ``jobs_claimable`` in claim order
and stops after its limit, instead of sorting the whole queue every time."""

from __future__ import annotations

import re

import pytest

from tether import Tether
from tether.store.postgres.tx import CLAIM_PLAN, QUERIES

pytestmark = pytest.mark.postgres


def _plan(store, sql: str, params: dict, begin: tuple[str, ...]) -> str:
    """The plan ``sql`` ran with (EXPLAIN ANALYZE), in a transaction begun by ``begin`` and
    rolled back."""
    with store._read() as tx:
        for statement in begin:
            tx.conn.execute(statement)
        rows = tx.conn.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql,
                               params).fetchall()
        tx.conn.execute("ROLLBACK")
    return "\n".join(next(iter(r.values())) for r in rows)


def test_a_claim_after_a_bulk_load_walks_the_claim_index_in_order(pg_url):
    app = Tether(pg_url)
    app.register("t", lambda ctx, payload: None)
    try:
        for _ in range(3):
            app.submit_many([{"type": "t"} for _ in range(1_000)])
        with app.store._read() as tx:
            never = tx.conn.execute("SELECT reltuples FROM pg_class "
                                    "WHERE oid = 'jobs'::regclass").fetchone()
        assert never is not None and never["reltuples"] < 0  # never analyzed: stale statistics
        params = {"worker_id": "w", "queues": None, "types": [], "versions": ["t@"],
                  "limit": 8,
                  "lease_ttl": 30.0, "now": None, "start": True}
        sql = str(QUERIES["claim_jobs"])
        default = _plan(app.store, sql, params, ("BEGIN",))
        claimed = _plan(app.store, sql, params, CLAIM_PLAN)
        # What the settings are for: without them this planner sorts the whole queue ...
        assert "Bitmap Heap Scan on jobs" in default or "Sort Key: j.priority" in default
        # ... with them it reads the claim index in order and stops at the limit.
        assert "Index Scan using jobs_claimable on jobs j" in claimed
        assert "Sort Key: j.priority" not in claimed and "Bitmap" not in claimed
        assert "JIT" not in claimed
        claims = app.store.claim("w", queues=None, types=[], versions=["t@"], limit=8,
                                 lease_ttl=30, start=True)
        assert [c.job.id for c in claims] == sorted(c.job.id for c in claims)
        assert len(claims) == 8
    finally:
        app.close()


def test_a_fair_claim_after_a_bulk_load_seeks_each_projects_first_jobs(pg_url):
    """``claim_jobs_fair`` (the default claim) reaches each (project, priority) level, its
    head and the first jobs of the levels it may take through ``jobs_fair`` seeks, whatever the
    statistics say: one row a level, then limit rows a chosen level, never the queue."""
    app = Tether(pg_url)
    app.register("t", lambda ctx, payload: None)
    try:
        for project in ("p0", "p1", "p2"):
            app.submit_many([{"type": "t", "project": project} for _ in range(1_000)])
        params = {"worker_id": "w", "queues": None, "types": [], "versions": ["t@"],
                  "limit": 8, "lease_ttl": 30.0, "now": None, "start": True, "aging_s": 60.0}
        claimed = _plan(app.store, str(QUERIES["claim_jobs_fair"]), params, CLAIM_PLAN)
        # levels: a plain index scan (it marks the dead entries of claimed jobs it passes)
        assert "Index Scan using jobs_fair on jobs j (actual rows=1" in claimed
        heads, picked = re.findall(r"Index Scan using jobs_fair on jobs j_\d+ "
                                   r"\(actual rows=(\d+) loops=(\d+)\)", claimed)
        assert heads == ("1", "3") and picked == ("8", "3")  # a head, then 8, per level
        assert "Seq Scan on jobs" not in claimed and "Bitmap" not in claimed
        claims = app.store.claim("w", queues=None, types=[], versions=["t@"], limit=8,
                                 lease_ttl=30, start=True)
        assert [c.job.project for c in claims] == ["p0", "p1", "p2"] * 2 + ["p0", "p1"]
    finally:
        app.close()
