"""A batched finish (``succeed_many``) reads its batch's rows by primary key, whatever the
statistics say and however many jobs other workers hold: planned as a join with its input,
the statement read every running job to find the batch's. Checked in the plan PostgreSQL ran,
both as psycopg first sends it (a custom plan) and once prepared (a generic plan)."""

from __future__ import annotations

import re

import psycopg
import pytest
from psycopg.rows import dict_row

from tether import JobState, Tether
from tether.store.base import Outcome
from tether.store.postgres.store import positions
from tether.store.postgres.tx import QUERIES

pytestmark = pytest.mark.postgres

TYPES = {"now": "timestamptz", "ids": "bigint[]", "pos": "jsonb", "attempts": "integer[]",
         "results": "text[]", "data": "text[]"}


def _plans(app: Tether, params: dict) -> list[str]:
    """The custom and the generic plan the statement ran with (EXPLAIN ANALYZE, rolled back)."""
    sql = str(QUERIES["succeed_many"])
    names = list(TYPES)
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", sql)
    args = ", ".join(f"%({n})s::{t}" for n, t in TYPES.items())
    plans = []
    # A connection of its own, that never prepares: after a ROLLBACK psycopg deallocates every
    # statement it prepared on a connection (a pooled one may hold some), finish_plan with them.
    with psycopg.connect(app.store.conninfo, autocommit=True, prepare_threshold=None,
                         row_factory=dict_row) as conn:
        cur = psycopg.ClientCursor(conn)
        for mode in ("force_custom_plan", "force_generic_plan"):
            cur.execute("BEGIN")
            cur.execute(f"SET LOCAL plan_cache_mode = {mode}")
            cur.execute(f"PREPARE finish_plan ({', '.join(TYPES.values())}) AS {numbered}")
            cur.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE finish_plan ({args})",
                        params)
            plans.append("\n".join(next(iter(r.values())) for r in cur.fetchall()))
            cur.execute("ROLLBACK")
            cur.execute("DEALLOCATE finish_plan")
    return plans


def test_a_batched_finish_reads_only_its_own_rows_beside_thousands_running(pg_url):
    app = Tether(pg_url)
    app.register("t", lambda ctx, payload: None)
    try:
        app.submit_many([{"type": "t"} for _ in range(2_000)])
        held = app.store.claim("other", queues=None, limit=2_000, lease_ttl=300, start=True)
        assert len(held) == 2_000  # running, held by another worker
        batch = held[:8]
        ids = [c.job.id for c in batch]
        params = {"now": None, "ids": ids, "attempts": [c.attempt for c in batch],
                  "pos": positions(ids),
                  "results": ["null"] * 8, "data": [None] * 8}
        for plan in _plans(app, params):
            jobs_scans = [line for line in plan.splitlines()
                          if re.search(r"Scan (?:using \w+ )?on jobs\b", line)]
            assert jobs_scans and all("jobs_pkey" in line or "Bitmap Heap" in line
                                      for line in jobs_scans), plan
            assert "Seq Scan on jobs" not in plan and "jobs_state" not in plan, plan
            assert not re.search(r"rows=(\d{3,})", plan), plan  # no node touched ~2,000 rows
        app.store.finish_many([(c.job.id, c.attempt, Outcome(JobState.SUCCEEDED,
                                                           result_json='{"n": 1}'))
                               for c in batch])
        assert {app.get(i).state for i in ids} == {JobState.SUCCEEDED}
        assert app.get(ids[0]).result == {"n": 1}
        assert app.get(held[8].job.id).state == JobState.RUNNING
    finally:
        app.close()
