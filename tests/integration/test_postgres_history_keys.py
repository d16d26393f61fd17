"""On PostgreSQL a job's events and attempts carry no foreign key (migration 0016): nothing
checks each inserted row against ``jobs``, yet deleting jobs, by prune or by hand, still takes
their history with them, in the deleting statement's transaction."""

from __future__ import annotations

import pytest

from tether import JobState, Tether
from tests.contract.test_context import claim_and_run

pytestmark = pytest.mark.postgres


def _keys(app: Tether) -> list[str]:
    with app.store._read() as tx:
        rows = tx.conn.execute(
            "SELECT conrelid::regclass::text AS tbl FROM pg_constraint "
            "WHERE contype = 'f' AND confrelid = to_regclass('jobs')").fetchall()
    return sorted(r["tbl"].rsplit(".", 1)[-1] for r in rows)


def _history(app: Tether, job_id: int) -> tuple[int, int]:
    return len(app.store.events(job_id)), len(app.store.attempts(job_id))


def test_history_rows_are_not_key_checked_and_still_go_with_their_job(pg_url):
    app = Tether(pg_url)
    try:
        app.register("t", lambda ctx, payload: payload)
        keys = _keys(app)
        assert "job_events" not in keys and "job_attempts" not in keys
        assert "call_journal" in keys  # the other tables keep theirs
        app.submit("t", {})
        done = claim_and_run(app)
        assert done.state == JobState.SUCCEEDED
        kept = app.submit("t", {})
        assert _history(app, done.id)[0] >= 4 and _history(app, done.id)[1] == 1
        with app.store._write() as tx:
            tx.conn.execute("DELETE FROM jobs WHERE id = %s", (done.id,))
        assert _history(app, done.id) == (0, 0)
        assert _history(app, kept.id) == (1, 0)
    finally:
        app.close()


def test_a_rolled_back_delete_keeps_the_history(pg_url):
    app = Tether(pg_url)
    try:
        app.register("t", lambda ctx, payload: payload)
        app.submit("t", {})
        done = claim_and_run(app)
        before = _history(app, done.id)
        with app.store._read() as tx, pytest.raises(RuntimeError):
            with tx.conn.transaction():
                tx.conn.execute("DELETE FROM jobs WHERE id = %s", (done.id,))
                raise RuntimeError("changed my mind")
        assert _history(app, done.id) == before
        assert app.get(done.id).state == JobState.SUCCEEDED
    finally:
        app.close()
