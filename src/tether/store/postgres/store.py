"""PostgreSQL store: many workers on many machines, one database.

The storage rules live in ``store/sql.py``; this module decides how they meet PostgreSQL:

* Connections come from a psycopg_pool ``ConnectionPool`` in autocommit mode. A write is an
  explicit ``BEGIN`` ... ``COMMIT``, so a failure is known to be before or during COMMIT
  (``retry.py`` retries the first always, the second only for idempotent operations).
* Time is the database clock: ``_now`` reads ``now()`` (the transaction's start), so lease
  expiry, backoff and claim eligibility are judged by one clock, never a worker's. A test
  that injects ``clock=`` gets that time bound instead.
* Statements run through ``tx.PgTx``: JSON read back as text, the shape SQLite returns,
  times bound as timestamptz. Money is numeric (read as ``Decimal``).
* Claims are one statement (``claim_jobs`` in queries/leases.sql); rows read for a read-modify-write
  are locked (``FOR UPDATE``), queue-like scans skip locked rows.
* ``migrate()`` takes a transaction-level advisory lock, so workers starting together do not
  race.
* ``wait_for_work()`` is the LISTEN/NOTIFY wake-up (``notify.py``).
* Behind a transaction-pooling PgBouncer (``?pooler=transaction``) nothing outlives a
  transaction and LISTEN goes on a direct URL, or is off (``pooler.py``).
* ``submit(..., conn=psycopg_connection)`` runs inside the caller's open transaction.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Iterator, Sequence

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from ...clock import Clock
from ...errors import ConfigurationError, StoreError
from ...core.states import JobState, check_transition
from ...core.pricing import PriceProfile
from ...records import Job
from ...wakeup import Wakeup
from ..base import CallerConnection, Claim, FinishSignal, NewJob, Outcome
from ..migrate import discover
from ..rows import load_json, to_job
from ..tx import present
from . import pooler as pooling
from .group import GroupedCalls
from .notify import SCHEMA, ActivityListener, FinishListener, Listener, PollingSignal
from .probe import probe
from .retry import TransientStoreError, retry_transient, translate
from .tx import QUERIES, PgTx, caller_tx, connect_error, conninfo_from_url, json_as_text

__all__ = ["HERE", "QUERIES", "PostgresStore", "conninfo_from_url"]

HERE = Path(__file__).parent
_MIGRATE_LOCK = "hashtextextended('tether.migrate:' || current_schema(), 0)"


def _outcome_unknown(exc: BaseException) -> bool:
    """Whether an autocommit statement that failed with ``exc`` may have committed: only when
    the connection dropped with no word from the server. A server that ended the session
    (SQLSTATE class 57: shutdown, terminated backend) rolled the statement back; a failure
    to connect (class 08, pool timeout) never sent it."""
    cause = exc.__cause__
    if isinstance(cause, PoolTimeout):
        return False
    return not (getattr(cause, "sqlstate", None) or "")


def positions(ids: Sequence[int]) -> str:
    """``succeed_many``'s ``pos``: each id's 1-based place in the statement's input arrays,
    as a JSON object, so the statement reads them by id instead of joining with its input."""
    return "{" + ",".join(f'"{job_id}":{k}' for k, job_id in enumerate(ids, 1)) + "}"


@retry_transient(
    idempotent=("claim", "start", "finish", "finish_many", "set_stage", "expire_leases",
                "promote_due", "register_worker", "stop_worker", "prune", "set_queue_paused",
                "save_profile", "set_type_paused", "put_flow_limit", "delete_flow_limit",
                "put_blob"),
    never=("close", "migrate", "heartbeat", "wait_for_work", "transaction"))
class PostgresStore(GroupedCalls):
    """``postgresql://user@host:5432/db``. Options: ``min_size``/``max_size`` (pool;
    ``max_size`` defaults to ``TETHER_PG_POOL_MAX`` or 10), ``connect_timeout`` (s, waiting
    for a pooled connection), ``create`` (default True: migrate on open; False: an existing
    tether schema only, see ``probe.py``), ``retry_timeout`` (s, how long transient
    failures are retried), ``clock`` (tests only: replaces the database clock),
    ``pooler`` (``"transaction"``, as ``?pooler=transaction`` in the URL: behind a
    transaction-pooling PgBouncer), ``listen_url`` (a direct URL for LISTEN; default
    ``TETHER_LISTEN_URL``, else the URL itself unless it is pooled)."""

    _submit_writes_events = True
    _submit_columns = True
    group_commit = False
    """Concurrent commits already share a WAL flush here; see ``transaction``."""
    _budget_deltas = True
    """Many writers at once: call batches add to shared accumulators (``accounting.py``)."""
    _succeed_alone = True

    def __init__(self, url: str, *, clock: Clock | None = None, migrate: bool = True,
                 create: bool = True, min_size: int = 1, max_size: int | None = None,
                 connect_timeout: float = 5.0, retry_timeout: float = 15.0,
                 pooler: str | None = None, listen_url: str | None = None) -> None:
        self.url = url
        self.clock = clock
        self.retry_timeout = retry_timeout
        libpq_url, self.pooler = pooling.split_pooler(url, pooler)
        self.conninfo = conninfo_from_url(libpq_url)
        direct = pooling.listen_url(listen_url)
        if direct is not None and pooling.split_pooler(direct)[1] is not None:
            raise ConfigurationError("the listen URL must reach PostgreSQL directly; "
                                     "it says pooler=transaction")
        self.listen_conninfo: str | None = (
            conninfo_from_url(direct) if direct is not None
            else None if self.pooler is not None else self.conninfo)
        """Where LISTEN connects; None: nowhere (a pooled URL and no direct one): poll."""
        self._listen_schema: str | None = None
        self._warned_polling = False
        self._closed = False
        self._listener: Listener | None = None
        self._lock = threading.Lock()
        self._recovering = threading.Lock()
        if max_size is None:
            max_size = pooling.max_size_from_env()
        self._pool: ConnectionPool[psycopg.Connection[DictRow]] = ConnectionPool(
            self.conninfo, min_size=min_size, max_size=max_size, open=False,
            timeout=connect_timeout, name="tether",
            kwargs={"autocommit": True, "row_factory": dict_row,
                    **pooling.pool_kwargs(self.pooler)},
            configure=lambda conn: json_as_text(conn.adapters))
        probe(self.conninfo, url, create=create)
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
            if migrate and create:
                self.migrate()
        except BaseException as exc:
            self._pool.close()
            if isinstance(exc, PoolTimeout):  # the pool only logs why: ask once, directly
                raise StoreError(f"cannot connect to PostgreSQL: {connect_error(self.conninfo)}"
                                 ) from exc
            if isinstance(exc, psycopg.Error):
                raise StoreError(f"cannot open PostgreSQL store: {exc}") from exc
            raise

    # --- connections and transactions ---------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[DictRow]]:
        if self._closed:
            raise StoreError("the PostgreSQL store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:  # getting, resetting or returning the connection
            raise translate(exc) from exc

    @contextmanager
    def _write(self, conn: Any = None) -> Iterator[PgTx]:
        if conn is not None:
            yield caller_tx(conn)
            return
        with self._connection() as c:
            try:
                if self.clock is None:  # nearly every write needs now(): same round trip
                    cur = c.execute("BEGIN; SELECT now()")
                    cur.nextset()
                    tx = PgTx(c, started_at=present(cur.fetchone())["now"].timestamp())
                else:
                    c.execute("BEGIN")
                    tx = PgTx(c)
            except psycopg.Error as exc:
                raise translate(exc, conn=c) from exc
            yield tx  # an exception here leaves the pool to roll back
            if tx.committed:
                return
            try:
                c.execute("COMMIT")
            except psycopg.Error as exc:
                raise translate(exc, conn=c, during_commit=True) from exc

    @contextmanager
    def _read(self) -> Iterator[PgTx]:
        """Statements one by one in autocommit: each is atomic and sees committed data."""
        with self._connection() as c:
            yield PgTx(c)

    def _now(self, tx: Any, now: float | None) -> float:
        if now is not None:
            return now
        if self.clock is not None:
            return self.clock.time()
        return tx.db_now()

    def now(self) -> float:
        if self.clock is not None:
            return self.clock.time()
        with self._read() as tx:
            return tx.db_now()

    def _list_param(self, values: Iterable[str] | None) -> Any:
        return None if values is None else sorted(values)

    def _estimate_jobs(self, tx: Any, queue: str, state: str) -> int:
        """The planner's row estimate, from its statistics of ``jobs`` (refreshed by
        autovacuum's ANALYZE as the table grows): no row is read."""
        plan = present(tx.one("estimate_jobs", queue=queue, state=state))["QUERY PLAN"]
        return int(load_json(plan)[0]["Plan"]["Plan Rows"])

    def _recover(self) -> None:
        """Before a retry: drop pooled connections that died with the server (one thread)."""
        if self._recovering.acquire(blocking=False):
            try:
                with suppress(Exception):
                    self._pool.check()
            finally:
                self._recovering.release()

    # --- claims -----------------------------------------------------------------------------------

    def claim(self, worker_id: str, *, queues: Sequence[str] | None, limit: int, lease_ttl: float,
              now: float | None = None, start: bool = False, types: Sequence[str] | None = None,
              versions: Sequence[str] | None = None, fair: bool = True) -> list[Claim]:
        """``Leases.claim`` in one statement: ``claim_jobs_fair``, or ``claim_jobs``."""
        if limit <= 0:
            return []
        if now is None and self.clock is not None:
            now = self.clock.time()
        with self._read() as tx:
            rows = tx.claim("claim_jobs_fair" if fair else "claim_jobs", worker_id=worker_id,
                            queues=self._list_param(queues), types=self._list_param(types),
                            versions=self._list_param(versions), limit=limit,
                            lease_ttl=float(lease_ttl), now=now, start=start)
            self._claimed(tx, rows, fair)
        return [Claim(to_job(r), int(r["lease_attempt"]), started=bool(r["started"]))
                for r in rows]

    # --- submission -------------------------------------------------------------------------------

    def submit(self, jobs: Sequence[NewJob], *, conn: CallerConnection | None = None,
               profile: PriceProfile | None = None) -> list[tuple[Job, bool]]:
        """Jobs whose queues and price profile this store has written before are one
        autocommit statement (a single round trip, atomic by itself) when they are one job,
        or when none has an idempotency key (none can be a repeat to look up, nor conflict
        after the others committed); the rest (a flow key, a key that exists) is shared."""
        if (conn is None and (len(jobs) == 1 or all(j.idempotency_key is None for j in jobs))
                and all(j.flow_mode is None for j in jobs)
                and self._setup_rows(jobs, profile, conn) == ([], False)):
            now = self.clock.time() if self.clock is not None else None
            try:
                with self._read() as tx:
                    new = self._insert_jobs(tx, jobs, now)
            except TransientStoreError as exc:
                exc.during_commit = _outcome_unknown(exc) and any(
                    j.idempotency_key is None for j in jobs)
                raise
            if not any(job is None for job in new):
                return [(present(job), True) for job in new]
        return super().submit(jobs, conn=conn, profile=profile)

    def _succeed_plain(self, tx: Any, items: Sequence[tuple[int, int, Outcome]],
                       now: float | None) -> tuple[set[int], list[int]]:
        """Plain successes, children counted in their gathers, in one statement: one round
        trip a batch; ``now`` None: the statement reads the clock (``_succeed_alone``)."""
        wanted = [i for i, (_, _, out) in enumerate(items)
                  if out.state == JobState.SUCCEEDED and out.kind is None]
        if not wanted:
            return set(), []
        check_transition(JobState.RUNNING, JobState.SUCCEEDED)
        if now is None and self.clock is not None:
            now = self.clock.time()
        ids = [items[i][0] for i in wanted]
        rows = tx.all("succeed_many", ids=ids, pos=positions(ids),
                      attempts=[items[i][1] for i in wanted],
                      results=[items[i][2].result_json for i in wanted],
                      data=[self._json_param(items[i][2].data) for i in wanted], now=now)
        done = {int(r["id"]) for r in rows if r["id"] is not None}
        return {i for i in wanted if items[i][0] in done}, [
            int(r["wake"]) for r in rows if r["wake"] is not None]

    @contextmanager
    def transaction(self, *, savepoints: bool = True) -> Iterator[None]:
        """Writes inside keep their own transactions here. Group commit buys little on
        PostgreSQL, which already shares one WAL flush among concurrent commits, and one
        savepoint per write would exhaust the subtransaction cache (64) at batch sizes that
        matter; separate transactions also keep every write individually retryable."""
        yield

    def _array_param(self, values: Sequence[Any]) -> Any:
        return list(values)

    # --- wake-up ----------------------------------------------------------------------------------

    def wait_for_work(self, timeout: float, wake: threading.Event | Wakeup | None = None) -> bool:
        """Block until a job may have become claimable (a NOTIFY, or the listen connection
        was re-established), ``wake`` is set, or ``timeout`` passes. True: notified."""
        if self._no_listen():  # behind a transaction pooler with no direct URL: poll
            (wake if wake is not None else threading.Event()).wait(timeout)
            return False
        schema = self._schema_for_listen()
        with self._lock:
            if self._closed:
                return False
            if self._listener is None:
                self._listener = Listener(present(self.listen_conninfo), schema=schema)
            listener = self._listener
        return listener.wait(timeout, wake)

    def finish_signal(self) -> FinishSignal:
        """NOTIFY on ``tether.done:<schema>`` (migration 0007), on a connection of its own."""
        if self._no_listen():
            return PollingSignal()
        return FinishListener(present(self.listen_conninfo), self._schema_for_listen())

    def event_signal(self) -> FinishSignal:
        """LISTEN for jobs queued and jobs finished; the other events have no NOTIFY."""
        if self._no_listen():
            return PollingSignal()
        return ActivityListener(present(self.listen_conninfo), self._schema_for_listen())

    def _no_listen(self) -> bool:
        """True (after one warning) when there is nowhere to LISTEN."""
        if self.listen_conninfo is not None:
            return False
        if not self._warned_polling:
            self._warned_polling = True
            pooling.warn_polling()
        return True

    def _schema_for_listen(self) -> str | None:
        """The schema of this store's jobs, read through the pool, when LISTEN connects
        elsewhere (its search_path may differ); None when it connects here."""
        if self.listen_conninfo == self.conninfo:
            return None
        if self._listen_schema is None:
            with self._read() as tx:
                self._listen_schema = present(tx.conn.execute(SCHEMA).fetchone())["schema"]
        return self._listen_schema

    def _feed_bounds(self, tx: Any) -> dict[str, Any]:
        if self.clock is not None:  # events are stamped by the injected clock: no horizon
            return {"horizon_us": None}
        return super()._feed_bounds(tx)

    def _feed_at(self, text: str) -> dict[str, Any]:
        try:
            return {"at_us": int(text)}
        except ValueError:  # not one of this backend's positions: the nearest microsecond
            return {"at_us": int(float(text))}

    @property
    def listener(self) -> Listener | None:
        """The LISTEN side, once ``wait_for_work`` has started it (for operators and tests)."""
        return self._listener

    # --- lifecycle --------------------------------------------------------------------------------

    def migrate(self) -> list[int]:
        """Apply pending migrations, each in its own transaction with its version row. Each
        transaction first takes a transaction-level advisory lock (per schema) and re-reads
        the applied versions, so concurrent starters apply each exactly once. A session lock
        would do the same on a direct connection, but behind a transaction pooler it would
        be taken on one server session and released (or not) on another."""
        applied: list[int] = []
        migrations = discover(HERE / "migrations")
        try:
            with self._pool.connection() as c:
                row = present(c.execute("SELECT current_schema() AS schema, "
                                        "pg_backend_pid() AS pid").fetchone())
                if row["schema"] is None:
                    raise ConfigurationError("the search_path names no existing schema")
                pooling.warn_if_proxied(self.pooler, c.info.backend_pid, row["pid"])
                while True:
                    with c.transaction():
                        c.execute(f"SELECT pg_advisory_xact_lock({_MIGRATE_LOCK})")
                        c.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                                  "version integer PRIMARY KEY, name text NOT NULL, "
                                  "applied_at timestamptz NOT NULL DEFAULT now())")
                        done = {r["version"] for r in PgTx(c).all("applied_migrations")}
                        pending = [m for m in migrations if m.version not in done]
                        if pending:
                            c.execute(pending[0].sql)
                            c.execute("INSERT INTO schema_migrations (version, name) "
                                      "VALUES (%s, %s)", (pending[0].version, pending[0].name))
                    if not pending:
                        return applied
                    applied.append(pending[0].version)
        except psycopg.Error as exc:
            raise translate(exc) from exc

    def check_integrity(self) -> None:
        """Nothing to check at start: the server checks and recovers its own files."""

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        self._pool.close()
