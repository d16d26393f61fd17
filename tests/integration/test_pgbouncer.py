"""tether behind a real PgBouncer in transaction pooling mode (issue 25).

A PgBouncer process of our own (``tests/pgbouncer.py``) sits in front of the shared server;
each test's private schema is an entry of its own there. Clients and real worker processes
use the pooled URL (``?pooler=transaction``); LISTEN goes on the direct URL when the worker
has one (``TETHER_LISTEN_URL``), and is off, with a warning, when it has none. PgBouncer's
admin console shows the transactions really went through it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from decimal import Decimal

import psycopg
import pytest

from tether import JobState, Tether
from tether.errors import ConfigurationError
from tether.providers.simulated import bill_total, read_bill
from tether.store.base import Outcome
from tether.store.postgres.notify import PollingSignal
from tether.store.postgres.store import PostgresStore
from tests.apps.basic import app as basic_app
from tests.apps.money import app as money_app
from tests.conftest import PG_URL, require_postgres, require_tool
from tests.pg import count_jobs, fresh_schema_url
from tests.pgbouncer import PgBouncer, pgbouncer_problem
from tests.procs import start_worker, stop, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

POLLING_WARNING = "no direct URL for LISTEN is set"


@pytest.fixture(scope="module")
def bouncer():
    require_postgres()
    require_tool("pgbouncer", pgbouncer_problem())
    with PgBouncer(PG_URL) as b:
        yield b


class Target:
    """One private schema, reachable directly and through PgBouncer."""

    def __init__(self, bouncer: PgBouncer) -> None:
        self.schema = f"t_{uuid.uuid4().hex[:12]}"
        self.direct = fresh_schema_url(PG_URL, self.schema)
        self.alias = f"db_{self.schema}"
        self.pooled = bouncer.database(self.schema, self.alias)
        self.bouncer = bouncer

    def client(self, app: Tether, **options) -> Tether:
        client = Tether(self.pooled, **options)
        client.registry = app.registry  # the workers' job types, so submit validates them
        return client

    def transactions(self) -> int:
        stats = self.bouncer.stats(self.alias)
        return int(stats["total_xact_count"]) if stats else 0

    def listening(self) -> list[str]:
        """The LISTEN statements sessions on the server run for this schema's channels."""
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            rows = conn.execute("SELECT query FROM pg_stat_activity WHERE query LIKE 'LISTEN%%'"
                                " AND query LIKE %s", (f"%{self.schema}%",)).fetchall()
        return [r[0] for r in rows]


@pytest.fixture
def target(bouncer):
    return Target(bouncer)


def worker_env(target: Target, *, listen: bool, **extra: str) -> dict[str, str]:
    env = {"TETHER_LOG_LEVEL": "WARNING", **extra}
    env["TETHER_LISTEN_URL"] = target.direct if listen else ""
    return env


def test_submit_and_submit_many_through_the_pooler_drain_exactly_once(target, tmp_path):
    client = target.client(basic_app)
    out = tmp_path / "lines.txt"
    client.submit_many([{"type": "append_line", "payload": {"path": str(out), "n": i}}
                        for i in range(150)])
    for i in range(150, 170):
        client.submit("append_line", {"path": str(out), "n": i})
    submitted = target.transactions()  # PgBouncer's own count, live
    assert submitted >= 21, "each single submit, and the batch, through PgBouncer"
    log = tmp_path / "w.log"
    worker = start_worker(target.pooled, concurrency=4, poll=0.2, log=log,
                          env=worker_env(target, listen=True))
    try:
        wait_until(lambda: count_jobs(target.direct, "succeeded") == 170, timeout=60,
                   interval=0.2, what="170 jobs to succeed")
    finally:
        assert stop(worker) == 0
    counts = Counter(int(x) for x in out.read_text().split())
    assert sorted(counts) == list(range(170)) and set(counts.values()) == {1}
    text = log.read_text()
    assert "prepared statement" not in text and "ERROR" not in text, text[-3000:]
    # the worker's claims and finishes went through PgBouncer too, in transaction mode
    assert target.transactions() - submitted >= 2
    assert target.bouncer.pools(target.alias)["pool_mode"] == "transaction"
    client.close()


def test_budgeted_calls_and_heartbeats_go_through_the_pooler(target, tmp_path):
    """Reservations and settlements through the pooler keep the budget; a job that runs for
    longer than its lease keeps it (heartbeats through the pooler), and runs once."""
    client = target.client(money_app)
    bill = tmp_path / "bill.jsonl"
    lease_ttl = 1.0
    # each call reserves about $0.000136 and costs about $0.000105; eight calls at a time,
    # 0.5 s each: the full job runs four rounds, twice its lease
    capped = client.submit("burner", {"calls": 40}, budget={"max_cost_usd": "0.0010"})
    full = client.submit("burner", {"calls": 32}, budget={"max_cost_usd": "1"})
    worker = start_worker(target.pooled, app="tests.apps.money:app", concurrency=2,
                          lease_ttl=lease_ttl, poll=0.2, log=tmp_path / "w.log",
                          env=worker_env(target, listen=True, TETHER_SIM_BILL=str(bill),
                                         TETHER_SIM_LATENCY="0.5"))
    try:
        wait_until(lambda: client.get(full.id).terminal
                   and client.get(capped.id).state == JobState.PAUSED,
                   timeout=60, what="one job to finish and one to pause on its budget")
    finally:
        assert stop(worker) == 0
    done, paused = client.get(full.id), client.get(capped.id)
    assert done.state == JobState.SUCCEEDED and done.attempt_count == 1
    (attempt,) = client.attempts(full.id)
    assert (attempt.finished_at - attempt.started_at).total_seconds() > 1.5 * lease_ttl
    assert paused.error_code == "budget_exhausted"
    assert bill_total(bill, job_id=capped.id) <= Decimal("0.0010")
    keys = Counter(e.key for e in read_bill(bill) if e.job_id == full.id)
    assert len(keys) == 32 and set(keys.values()) == {1}
    assert done.budget.used.spent_usd == bill_total(bill, job_id=full.id)
    assert len(client.ledger(full.id)) + len(client.ledger(capped.id)) == len(read_bill(bill))
    client.close()


def test_with_a_direct_listen_url_a_pooled_worker_wakes_by_notify(target, tmp_path):
    client = target.client(basic_app)
    out = tmp_path / "lines.txt"
    log = tmp_path / "w.log"
    poll = 10.0  # a pickup by polling would mostly take seconds
    worker = start_worker(target.pooled, concurrency=2, poll=poll, log=log,
                          env=worker_env(target, listen=True))
    try:
        wait_until(target.listening, timeout=30, what="the worker to LISTEN on the server")
        pickups = []
        for i in range(3):
            job = client.submit("append_line", {"path": str(out), "n": i})
            wait_until(lambda: client.get(job.id).terminal, timeout=2 * poll,
                       what=f"job {i} to finish")
            (attempt,) = client.attempts(job.id)
            pickups.append((attempt.claimed_at - client.get(job.id).created_at)
                           .total_seconds())
    finally:
        assert stop(worker) == 0
    assert max(pickups) < 1.5, pickups
    assert POLLING_WARNING not in log.read_text()
    client.close()


def test_without_a_listen_url_a_pooled_worker_warns_once_and_polls(target, tmp_path):
    client = target.client(basic_app)
    out = tmp_path / "lines.txt"
    log = tmp_path / "w.log"
    worker = start_worker(target.pooled, concurrency=2, poll=0.2, log=log,
                          env=worker_env(target, listen=False))
    try:
        wait_until(lambda: POLLING_WARNING in log.read_text(), timeout=30,
                   what="the polling warning")
        jobs = [client.submit("append_line", {"path": str(out), "n": i}) for i in range(5)]
        wait_until(lambda: all(client.get(j.id).terminal for j in jobs), timeout=30,
                   what="five jobs to finish by polling")
        assert target.listening() == []
    finally:
        assert stop(worker) == 0
    assert all(client.get(j.id).state == JobState.SUCCEEDED for j in jobs)
    assert log.read_text().count(POLLING_WARNING) == 1
    client.close()


def test_a_pooled_store_without_a_listen_url_polls_its_signals(target, caplog, monkeypatch):
    monkeypatch.delenv("TETHER_LISTEN_URL", raising=False)
    store = PostgresStore(target.pooled)
    try:
        assert store.pooler == "transaction" and store.listen_conninfo is None
        with caplog.at_level(logging.WARNING, logger="tether.store.postgres"):
            assert store.wait_for_work(0.05) is False
            signal = store.finish_signal()
            assert isinstance(signal, PollingSignal) and signal.wait(0.05) is None
            assert isinstance(store.event_signal(), PollingSignal)
        warnings = [r for r in caplog.records if POLLING_WARNING in r.getMessage()]
        assert len(warnings) == 1
        assert store.listener is None
    finally:
        store.close()


def test_the_listener_uses_the_pooled_schema_whatever_the_direct_urls_search_path(target):
    """The direct URL here has no search_path of its own (it would find ``public``); the
    finish signal still hears this schema's jobs, because the channel comes from the pool."""
    app = target.client(basic_app, listen_url=PG_URL)
    store = app.store
    signal = store.finish_signal()
    try:
        job = app.submit("append_line", {"path": "/dev/null", "n": 0})
        (claim,) = store.claim("w", queues=None, limit=1, lease_ttl=30)
        store.start(job.id, claim.attempt)
        store.finish(job.id, claim.attempt, Outcome(JobState.SUCCEEDED, result_json="{}"))
        heard: set[int] = set()
        wait_until(lambda: heard.update(signal.wait(1.0) or ()) or job.id in heard,
                   timeout=15, what="the finish notification")
    finally:
        signal.close()
        app.close()


def test_stores_starting_together_through_the_pooler_migrate_once(target):
    """The migration lock is transaction-level: a session lock through the pooler would be
    taken on one server session and released on another."""
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def open_one() -> None:
        try:
            s = PostgresStore(target.pooled)
            with lock:
                stores.append(s)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        with psycopg.connect(target.direct) as conn:
            rows = conn.execute("SELECT version, count(*) FROM schema_migrations "
                                "GROUP BY version").fetchall()
            held = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                "(classid::bigint << 32 | objid::bigint) = "
                "hashtextextended('tether.migrate:' || %s, 0)", (target.schema,)).fetchone()[0]
        assert rows and all(n == 1 for _, n in rows)
        assert max(v for v, _ in rows) == stores[0].schema_version()
        assert held == 0, "no advisory lock outlived its transaction"
    finally:
        for s in stores:
            s.close()


def test_a_pooled_url_without_the_marker_is_noticed(target, caplog):
    unmarked = target.pooled.replace("?pooler=transaction", "")
    with caplog.at_level(logging.WARNING, logger="tether.store.postgres"):
        PostgresStore(target.direct).close()
        assert not caplog.records
        PostgresStore(unmarked, max_size=1).close()
    assert any("?pooler=transaction" in r.getMessage() for r in caplog.records)


def test_a_listen_url_through_the_pooler_is_refused(target):
    with pytest.raises(ConfigurationError, match="directly"):
        PostgresStore(target.direct, listen_url=target.pooled)
