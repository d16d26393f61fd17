"""Transactional enqueue: ``submit(..., conn=...)`` joins the caller's open transaction, so a
job exists (and can run) exactly when the application's own rows commit with it."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager

import pytest

from tether import JobState


def register(app):
    @app.job("ship")
    def ship(ctx, payload):
        return {"shipped": payload["order"]}

    app.store  # open and migrate first: on SQLite the caller's transaction holds the write lock


@contextmanager
def app_connection(backend, database_url):
    """The application's own connection (same database), with an ``orders`` table of its own;
    yields (connection, begin, commit, rollback)."""
    if backend == "sqlite":
        from tether.store.sqlite.store import path_from_url
        conn = sqlite3.connect(path_from_url(database_url), isolation_level=None)
        conn.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)")
        ops = (lambda: conn.execute("BEGIN IMMEDIATE"), lambda: conn.execute("COMMIT"),
               lambda: conn.execute("ROLLBACK"))
    else:
        import psycopg
        from tether.store.postgres.store import conninfo_from_url
        conn = psycopg.connect(conninfo_from_url(database_url))
        conn.execute("CREATE TABLE IF NOT EXISTS orders (id integer PRIMARY KEY)")
        conn.commit()
        ops = (lambda: None, conn.commit, conn.rollback)  # psycopg opens the transaction itself
    try:
        yield (conn, *ops)
    finally:
        conn.close()


def orders(conn) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY id").fetchall()]


def test_rolled_back_enqueue_leaves_no_job_that_could_ever_run(app, backend, database_url, clock):
    register(app)
    with app_connection(backend, database_url) as (conn, begin, commit, rollback):
        begin()
        conn.execute("INSERT INTO orders (id) VALUES (1)")
        job = app.submit("ship", {"order": 1}, conn=conn)
        app.submit_many([{"type": "ship", "payload": {"order": n}} for n in (2, 3)], conn=conn)
        assert job.state == JobState.QUEUED
        rollback()
        assert orders(conn) == []
    assert app.list(limit=10) == []
    assert app.store.events(job.id) == []
    clock.advance(10 * 365 * 86400)
    assert app.store.claim("w", queues=None, limit=10, lease_ttl=30) == []
    assert app.store.promote_due() == 0 and app.store.expire_leases() == []


def test_committed_enqueue_runs(app, backend, database_url):
    register(app)
    with app_connection(backend, database_url) as (conn, begin, commit, rollback):
        begin()
        conn.execute("INSERT INTO orders (id) VALUES (7)")
        job = app.submit("ship", {"order": 7}, conn=conn, idempotency_key="order-7")
        commit()
        assert orders(conn) == [7]
    assert app.submit("ship", {"order": 7}, idempotency_key="order-7").id == job.id
    app.worker(concurrency=1, poll_interval=0.01).run(install_signals=False, stop_when_idle=True)
    done = app.get(job.id)
    assert done.state == JobState.SUCCEEDED and done.result == {"shipped": 7}


def test_conn_outside_a_transaction_is_refused(app, backend, database_url):
    from tether.errors import ConfigurationError
    register(app)
    with app_connection(backend, database_url) as (conn, begin, commit, rollback):
        if backend == "postgres":
            conn.autocommit = True
        with pytest.raises(ConfigurationError):
            app.submit("ship", {"order": 1}, conn=conn)
    assert app.list(limit=10) == []
