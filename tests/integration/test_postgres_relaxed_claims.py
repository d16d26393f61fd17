"""A claim commits without waiting for the WAL flush (``synchronous_commit = off`` for its
transaction only); everything else stays durable. A trigger in the test's schema records the
setting each writing transaction ran with, so the server itself says which was which."""

from __future__ import annotations

import pytest

from tether import JobState, Tether
from tether.store.base import Outcome

pytestmark = pytest.mark.postgres

RECORDER = """
CREATE TABLE commit_modes (tbl text, mode text);
CREATE FUNCTION record_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO commit_modes VALUES (TG_TABLE_NAME, current_setting('synchronous_commit'));
    RETURN NULL;
END $$;
CREATE TRIGGER record_attempts AFTER INSERT ON job_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION record_commit_mode();
CREATE TRIGGER record_jobs AFTER UPDATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION record_commit_mode();
"""


def modes(app: Tether) -> list[tuple[str, str]]:
    with app.store._read() as tx:
        rows = tx.conn.execute("DELETE FROM commit_modes RETURNING tbl, mode").fetchall()
    return sorted({(r["tbl"], r["mode"]) for r in rows})


def test_only_the_claim_commits_without_waiting_for_the_disk(pg_url):
    app = Tether(pg_url, max_size=1)  # one connection: a setting that leaked would show
    try:
        app.register("t", lambda ctx, payload: payload)
        job = app.submit("t", {})
        with app.store._write() as tx:
            tx.conn.execute(RECORDER)
        (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
        assert modes(app) == [("job_attempts", "off"), ("jobs", "off")]
        with app.store._read() as tx:
            assert tx.conn.execute("SHOW synchronous_commit").fetchone()[
                "synchronous_commit"] == "on"
        app.store.heartbeat("w", lease_ttl=30, jobs=[job.id])
        app.store.finish(job.id, claim.attempt, Outcome(JobState.SUCCEEDED, result_json="{}"))
        assert modes(app) == [("jobs", "on")], "the setting must not outlive the claim"
        assert app.get(job.id).state == JobState.SUCCEEDED
    finally:
        app.close()
