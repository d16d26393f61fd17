"""A spend report over a time window reads that window's ledger rows through the
``cost_ledger_created`` index, not the whole ledger, on both backends: checked in the plan each
database gives the statement and parameters the store runs (SQLite's EXPLAIN QUERY PLAN,
PostgreSQL's EXPLAIN after ANALYZE)."""

from __future__ import annotations

from tests.money import running_job
from tests.statements import recorded

ROWS = 50_000  # one a minute, about five weeks
COLUMNS = ("job_id, project, key, attempt, provider, model, input_tokens, output_tokens, "
           "input_per_mtok, output_per_mtok, price_profile, cost_usd, reserved_usd, confirmed, "
           "created_at")


def _seed(app, backend, job_id: int, now: float) -> None:
    with app.store._write() as tx:
        if backend == "sqlite":
            tx.conn.execute(
                f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                f"INSERT INTO cost_ledger ({COLUMNS}) SELECT ?, 'p', 'k' || i, 1, 'simulated', "
                f"'sim-small', 10, 10, '0.5', '1.5', 'p', '0.001', '0.001', 1, ? - i * 60 "
                f"FROM n", (ROWS, job_id, now))
            return
        tx.conn.execute(
            f"INSERT INTO cost_ledger ({COLUMNS}) SELECT %s, 'p', 'k' || i, 1, 'simulated', "
            f"'sim-small', 10, 10, 0.5, 1.5, 'p', 0.001, 0.001, true, "
            f"to_timestamp(%s - i * 60) FROM generate_series(1, %s) AS i", (job_id, now, ROWS))
    if backend == "postgres":
        with app.store._write() as tx:
            tx.conn.execute("ANALYZE cost_ledger")


def _plan(app, backend, sql: str, params: dict) -> str:
    with app.store._read() as tx:
        if backend == "sqlite":
            from tether.store.sqlite.tx import BOUND
            _, bind = BOUND["spend_report"]
            rows = tx.conn.execute("EXPLAIN QUERY PLAN " + sql, bind(params)).fetchall()
            return "\n".join(str(r[3]) for r in rows)
        from tether.store.postgres.tx import _bound
        rows = tx.conn.execute("EXPLAIN (COSTS OFF) " + sql, _bound(params)).fetchall()
        return "\n".join(next(iter(r.values())) for r in rows)


def test_a_report_since_a_day_ago_reads_that_day_through_the_time_index(app, backend, clock):
    job, _ = running_job(app, project="p")
    _seed(app, backend, job.id, clock.time())
    with recorded() as statements:
        report = app.spend("project", since="1d")
    assert [r.calls for r in report.rows] == [24 * 60]
    ((_, sql, params),) = [s for s in statements if s[0] == "spend_report"]
    plan = _plan(app, backend, sql, params)
    assert "cost_ledger_created" in plan, plan
    assert "Seq Scan on cost_ledger" not in plan and "SCAN cost_ledger" not in plan, plan
