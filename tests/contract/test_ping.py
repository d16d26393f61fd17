"""A liveness read (``Tether.ping``, behind ``/healthz``) costs the same beside millions of
jobs: it reads the schema version, never the jobs table. Counting every job by queue and state
(what ``/healthz`` did) takes seconds on a big table, longer than a probe waits, and waits for
whatever holds the jobs table."""

import threading

import psycopg

from tether.store.migrate import discover
from tether.store.postgres.store import HERE as PG_STORE


def test_ping_answers_with_the_schema_version(app):
    assert app.ping() == app.store.schema_version() == discover(PG_STORE / "migrations")[-1].version


def test_ping_never_reads_the_jobs_table(app, backend):
    app.register("t", lambda ctx, payload: None)
    app.submit_many([{"type": "t"} for _ in range(20)])
    if backend == "sqlite":
        seen: list[str] = []
        conn = app.store._conn()
        conn.set_trace_callback(seen.append)
        try:
            app.ping()
        finally:
            conn.set_trace_callback(None)
        assert seen and not [s for s in seen if "jobs" in s], seen
        return
    answered = threading.Event()
    with psycopg.connect(app.store.conninfo) as locker:  # a transaction holding jobs whole
        locker.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
        thread = threading.Thread(target=lambda: (app.ping(), answered.set()), daemon=True)
        thread.start()
        assert answered.wait(10), "ping waited for the jobs table"
        locker.rollback()
    thread.join(10)
