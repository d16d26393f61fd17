"""Why a batched finish can wait on another worker's claim (W9's `transactionid` waits,
docs/postgres.md): a ``FOR UPDATE SKIP LOCKED`` scan that reaches a row updated since its
snapshot locks the row's newer version, rechecks it, skips it, and keeps the lock until its
transaction ends. A claim does this to jobs other workers claimed a moment before; a worker
that finishes such a job at once waits for that claim to commit."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from tether import Tether

pytestmark = pytest.mark.postgres


def test_postgresql_keeps_the_lock_a_skipped_recheck_took(pg_url):
    """If a PostgreSQL release stops keeping that lock, W9's finish waits should go, and
    docs/postgres.md's account of them is out of date."""
    app = Tether(pg_url)
    app.store  # migrated: the schema exists
    slow = psycopg.connect(app.store.conninfo)
    try:
        with psycopg.connect(app.store.conninfo, autocommit=True) as c:
            c.execute("CREATE TABLE recheck (id int PRIMARY KEY, state text)")
            c.execute("INSERT INTO recheck VALUES (1, 'queued'), (2, 'queued')")
        got: list = []

        def claim() -> None:  # its filter sleeps on row 1, before that row is locked
            got.extend(slow.execute(
                "SELECT id FROM recheck WHERE state = 'queued' "
                "AND pg_sleep(CASE WHEN id = 1 THEN 1.0 ELSE 0 END) IS NOT NULL "
                "ORDER BY id FOR UPDATE SKIP LOCKED").fetchall())

        t = threading.Thread(target=claim)
        t.start()
        with psycopg.connect(app.store.conninfo, autocommit=True) as c:
            deadline = time.monotonic() + 20
            while not c.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event = "
                                "'PgSleep' AND pid = %s", (slow.info.backend_pid,)).fetchone()[0]:
                time.sleep(0.005)  # until the slow scan has its snapshot
                assert time.monotonic() < deadline
            c.execute("UPDATE recheck SET state = 'running' WHERE id = 1")  # claimed elsewhere
        t.join(20)
        assert got == [(2,)]  # row 1 failed the recheck: not returned ...
        with psycopg.connect(app.store.conninfo, autocommit=True) as c:
            c.execute("SET lock_timeout = '100ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):  # ... but still locked
                c.execute("UPDATE recheck SET state = 'succeeded' WHERE id = 1")
        slow.rollback()
    finally:
        slow.close()
        app.close()
