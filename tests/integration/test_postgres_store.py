"""PostgreSQL-specific guarantees: concurrency at the database, the claim index, recovery."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import psycopg.sql
import pytest

from tether import Tether
from tether.errors import StoreError
from tether.store.migrate import discover
from tether.store.postgres.store import HERE, QUERIES, PostgresStore, conninfo_from_url

pytestmark = pytest.mark.postgres
MIGRATIONS = HERE / "migrations"


def echo_app(url: str, **options) -> Tether:
    app = Tether(url, **options)

    @app.job("echo")
    def echo(ctx, payload):
        return payload

    return app


def test_fifty_concurrent_submits_with_one_key_create_one_job(pg_url):
    # 50 threads over 20 open connections (the shared server's connection budget is finite)
    app = echo_app(pg_url, min_size=20, max_size=20)
    app.store  # opened once here: Tether opens its store lazily, and not thread-safely
    barrier = threading.Barrier(50)

    def submit(_):
        barrier.wait()
        return app.submit_with_status("echo", {"doc": 42}, idempotency_key="doc-42")

    try:
        with ThreadPoolExecutor(50) as pool:
            results = list(pool.map(submit, range(50)))
        assert len({job.id for job, _ in results}) == 1
        assert sum(created for _, created in results) == 1
        assert len(app.list(limit=100)) == 1
        assert [e.kind for e in app.events(results[0][0].id)] == ["submitted"]
    finally:
        app.close()


def test_an_unkeyed_batch_is_one_statement_that_commits_all_of_its_jobs_or_none(pg_url):
    """A batch of unkeyed jobs on known queues is a single autocommit statement: a job the
    database refuses at the end (a check the test adds to the table, which nothing in tether
    checks first) leaves none of the others, and a batch that succeeds wakes its queues with
    one notification each."""
    app = echo_app(pg_url)
    try:
        app.submit("echo", None, queue="a")
        app.submit("echo", None, queue="b")
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("ALTER TABLE jobs ADD CONSTRAINT refuse_7 CHECK (priority <> 7)")
        with pytest.raises(StoreError, match="refuse_7"):
            app.submit_many([{"type": "echo", "payload": i} for i in range(500)]
                            + [{"type": "echo", "priority": 7}])
        assert len(app.list(limit=1000)) == 2
        with psycopg.connect(pg_url, autocommit=True) as listener:
            listener.execute("LISTEN " + _channel(listener))
            jobs = app.submit_many([{"type": "echo", "payload": i, "queue": "ab"[i % 2]}
                                    for i in range(500)])
            heard = sorted(n.payload for n in listener.notifies(timeout=2, stop_after=3))
        assert heard == ["a", "b"]
        assert [j.id for j in jobs] == sorted(j.id for j in jobs)
        assert all(job == app.get(job.id) for job in jobs[::50])
    finally:
        app.close()


def _channel(conn: psycopg.Connection) -> str:
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    return psycopg.sql.Identifier(f"tether:{schema}"[:63]).as_string(conn)


def test_concurrent_claimers_never_lease_one_job_twice(pg_url):
    app = echo_app(pg_url, max_size=8)
    try:
        app.submit_many([{"type": "echo", "payload": {"i": i}} for i in range(300)])

        def drain(worker: str) -> list[int]:
            got = []
            while claims := app.store.claim(worker, queues=None, limit=7, lease_ttl=30):
                got += [c.job.id for c in claims]
            return got

        with ThreadPoolExecutor(6) as pool:
            per_worker = list(pool.map(drain, [f"w{i}" for i in range(6)]))
        claimed = [job_id for ids in per_worker for job_id in ids]
        assert len(claimed) == len(set(claimed)) == 300
        assert sum(1 for ids in per_worker if ids) > 1, "the claimers really overlapped"
        assert {j.attempt_count for j in app.list(limit=300)} == {1}
    finally:
        app.close()


def test_the_claim_walks_the_claimable_index(pg_url):
    """Finished jobs must not slow claims down: the plan reads jobs_claimable, in order."""
    app = echo_app(pg_url)
    try:
        app.submit("echo", {})
        with psycopg.connect(conninfo_from_url(pg_url), autocommit=True) as conn:
            conn.execute("""
                INSERT INTO jobs (type, project, queue, state, run_after, max_attempts,
                                  safe_to_retry, input_config_hash, payload, created_at,
                                  updated_at, finished_at)
                SELECT 'echo', 'default', 'default',
                       CASE WHEN g % 20 = 0 THEN 'queued' ELSE 'succeeded' END,
                       now() - make_interval(secs => g), 3, true, 'h', '{}', now(), now(),
                       CASE WHEN g % 20 = 0 THEN NULL ELSE now() END
                FROM generate_series(1, 40000) g""")
            conn.execute("ANALYZE jobs")
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN " + QUERIES["claim_jobs"],
                {"now": None, "queues": None, "types": [], "versions": ["echo@"],
                 "limit": 10, "worker_id": "w",
                 "start": True, "lease_ttl": 30.0}).fetchall())
        assert "jobs_claimable" in plan, plan
        assert len(app.store.claim("w", queues=None, limit=10, lease_ttl=30)) == 10
    finally:
        app.close()


def test_connections_killed_under_the_store_are_replaced_transparently(pg_url):
    name = f"tether-test-{uuid.uuid4().hex[:8]}"
    app = echo_app(f"{pg_url}&application_name={name}", min_size=3, max_size=3)
    try:
        job = app.submit("echo", {})
        with psycopg.connect(conninfo_from_url(pg_url), autocommit=True) as conn:
            killed = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM "
                                  "pg_stat_activity WHERE application_name = %s",
                                  (name,)).fetchone()[0]
        assert killed == 3
        assert app.get(job.id).id == job.id
        assert app.submit("echo", {"again": True}).id != job.id
    finally:
        app.close()


def test_an_unreachable_server_is_a_store_error_that_says_why():
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL at .*127.0.0.1.*port 1"):
        PostgresStore("postgresql://postgres@127.0.0.1:1/none", connect_timeout=1)


def test_many_stores_starting_together_apply_each_migration_once(pg_url):
    url = pg_url  # a fresh, empty schema
    barrier = threading.Barrier(6)

    def open_store(_):
        barrier.wait()
        return PostgresStore(url)

    with ThreadPoolExecutor(6) as pool:
        stores = list(pool.map(open_store, range(6)))
    try:
        expected = [m.version for m in discover(MIGRATIONS)]
        assert {s.schema_version() for s in stores} == {expected[-1]}
        with psycopg.connect(conninfo_from_url(url)) as conn:
            versions = [r[0] for r in conn.execute(
                "SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == expected
    finally:
        for s in stores:
            s.close()


def test_a_batch_reads_its_journal_rows_with_a_fresh_plan_every_time(pg_url):
    """psycopg prepares a statement after its fifth run and the server keeps the plan it made
    then; for the journal read of a call batch that plan, made while the journal was nearly
    empty, scanned the job's whole journal ever after. It is never prepared; the others are."""
    from decimal import Decimal

    from tether import Usage
    from tether.core.budget import Reservation
    from tether.core.pricing import ModelPrice
    from tether.store.base import CallReserve, CallSettle

    app = echo_app(pg_url, min_size=1, max_size=1)  # one connection: its prepared statements
    try:
        job = app.submit("echo", {})
        (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
        app.store.start(job.id, claim.attempt)
        price = ModelPrice("simulated", "sim-small", Decimal("0.5"), Decimal("1.5"))
        for i in range(8):
            keys = [f"k{i}-{j}" for j in range(4)]
            reserve = [CallReserve(k, None, "simulated", "sim-small",
                                   Reservation(Decimal("0.01"), 10, 10)) for k in keys]
            settle = [CallSettle(k, Usage(5, 5), price, "p", '{"ok":true}', False)
                      for k in keys]
            for ops in (reserve, settle):
                assert [e for _, e in app.store.account(job.id, claim.attempt, ops)] == [None] * 4
        with app.store._read() as tx:
            prepared = [r["statement"] for r in tx.conn.execute(
                "SELECT statement FROM pg_prepared_statements").fetchall()]
        assert not [s for s in prepared if s.startswith(QUERIES["journal_keys"][:40])]
        assert [s for s in prepared if s.startswith(QUERIES["journal_finish"][:30])]
        assert len(app.ledger(job.id)) == 32
    finally:
        app.close()


def test_the_pool_size_comes_from_the_environment(pg_url, monkeypatch):
    from tether.errors import ConfigurationError
    monkeypatch.setenv("TETHER_PG_POOL_MAX", "3")
    for store, size in ((PostgresStore(pg_url), 3), (PostgresStore(pg_url, max_size=5), 5)):
        try:
            assert store._pool.max_size == size
        finally:
            store.close()
    monkeypatch.setenv("TETHER_PG_POOL_MAX", "lots")
    with pytest.raises(ConfigurationError, match="TETHER_PG_POOL_MAX"):
        PostgresStore(pg_url)
