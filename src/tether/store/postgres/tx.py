"""How the PostgreSQL store talks to the server: connection settings, and the transaction
handle (``tx.Tx``) that runs the named statements of ``queries/``.

JSON columns are jsonb but are read back as text, the shape SQLite returns, so the shared
logic sees one shape; times (``TIME_PARAMS``) are bound as timestamptz; psycopg errors become
tether errors (``retry.translate``).
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, UTC
from pathlib import Path
from typing import Any
from collections.abc import Iterator, Sequence

import psycopg
from psycopg.adapt import AdaptersMap
from psycopg.pq import TransactionStatus
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg.types.string import TextLoader

from ...errors import ConfigurationError
from ..flow import PRIORITY_AGING_S
from ..queries import load_queries
from ..tx import TIME_PARAMS, present
from .retry import translate

HERE = Path(__file__).parent
QUERIES = load_queries(HERE / "queries")
PLANNED_EACH_TIME = frozenset({"journal_keys"})
"""Statements never prepared. psycopg prepares a statement after its fifth run, and the server
then keeps the generic plan it chose at that moment until the table's statistics change. For
``journal_keys`` (``key = ANY(keys)`` within one job) a plan chosen while the journal held a
few rows stays a scan of the job's whole journal as it grows; planning it afresh each time
uses the index. (Planning every statement afresh, ``plan_cache_mode = force_custom_plan``,
costs more than it saves.)"""

CLAIM_PLAN = ("BEGIN", "SELECT set_config('enable_sort', 'off', true), "
              "set_config('enable_bitmapscan', 'off', true), set_config('jit', 'off', true), "
              "set_config('synchronous_commit', 'off', true)")
"""How a claim's transaction begins. The claim must walk ``jobs_claimable`` in order and stop
after ``limit`` rows, whatever the table's statistics say: right after a bulk load the planner
still believes the table small (never analyzed) and sorts the whole queue on every claim
instead, a cost that grows with the queue. A disabled plan type only costs more, so the one
sort left (the claimed rows' order) would price the statement into JIT compilation: off too.
The claim also commits without waiting for the WAL flush: a claim that a server crash loses
leaves its jobs queued, as a worker crash at that moment would, and the attempt's first
durable write flushes the WAL past it, so nothing durable can rest on a lost claim; it spares
every claim (and every pickup) a disk flush. No setting outlives the transaction."""

# Connection defaults; anything the URL sets wins. Keepalives notice a dead peer on an idle
# connection; tcp_user_timeout bounds how long unacknowledged data may hang (half-open TCP).
CONNECTION_DEFAULTS = {"connect_timeout": "5", "application_name": "tether", "keepalives": "1",
                       "keepalives_idle": "30", "keepalives_interval": "10",
                       "keepalives_count": "3", "tcp_user_timeout": "60000"}


def conninfo_from_url(url: str) -> str:
    """A libpq conninfo for ``postgresql://...`` (also ``postgres://``, ``postgresql+psycopg://``)."""
    for prefix in ("postgresql+psycopg://", "postgres://"):
        if url.startswith(prefix):
            url = "postgresql://" + url[len(prefix):]
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(f"invalid PostgreSQL URL: {exc}") from exc
    return make_conninfo("", **{**CONNECTION_DEFAULTS, **params})


def connect_error(conninfo: str) -> str:
    try:
        psycopg.connect(conninfo).close()
    except psycopg.Error as exc:
        return str(exc).strip() or type(exc).__name__
    return "timed out waiting for a connection"


_UTC = UTC


def _bound(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with its times (``TIME_PARAMS``, unix seconds) as timestamptz values."""
    for name in TIME_PARAMS.intersection(params):
        value = params[name]
        if value is not None and not isinstance(value, datetime):
            params[name] = datetime.fromtimestamp(value, _UTC)
    return params


def json_as_text(adapters: AdaptersMap) -> None:
    for name in ("json", "jsonb"):
        adapters.register_loader(name, TextLoader)


class PgTx:
    """Runs named statements on one connection; psycopg errors become tether errors."""

    __slots__ = ("caller", "committed", "conn", "started_at")

    def __init__(self, conn: psycopg.Connection[Any], *, caller: bool = False,
                 started_at: float | None = None) -> None:
        self.conn = conn
        self.caller = caller
        self.started_at = started_at  # now() of the open transaction, when already read
        self.committed = False  # by a batch(commit=True)

    def _execute(self, sql: str, params: Any,
                 prepare: bool | None = None) -> psycopg.Cursor[dict[str, Any]]:
        cur = self.conn.cursor(row_factory=dict_row)
        if self.caller:  # the caller's connection keeps its own adapters
            json_as_text(cur.adapters)
        try:
            cur.execute(sql, params and _bound(params), prepare=prepare)
        except psycopg.Error as exc:
            raise translate(exc, conn=self.conn) from exc
        return cur

    def one(self, _q: str, **params: Any) -> dict[str, Any] | None:
        return self._execute(QUERIES[_q], params).fetchone()

    def all(self, _q: str, **params: Any) -> list[dict[str, Any]]:
        return self._execute(QUERIES[_q], params,
                             prepare=False if _q in PLANNED_EACH_TIME else None).fetchall()

    def run(self, _q: str, **params: Any) -> int:
        return self._execute(QUERIES[_q], params).rowcount

    def many(self, _q: str, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        try:
            self.conn.cursor().executemany(QUERIES[_q], [_bound(r) for r in rows])
        except psycopg.Error as exc:
            raise translate(exc, conn=self.conn) from exc

    @contextmanager
    def batch(self, *, commit: bool = False) -> Iterator[None]:
        """Statements inside are sent together (psycopg pipeline mode) and their errors
        raised when the block ends: for writes whose results nobody reads. ``commit=True``
        sends the store's COMMIT with them (not in a caller's transaction)."""
        commit = commit and not self.caller
        try:
            with self.conn.pipeline():
                yield
                if commit:
                    self.conn.execute("COMMIT")
        except psycopg.Error as exc:
            raise translate(exc, conn=self.conn, during_commit=commit) from exc
        self.committed = commit

    def claim(self, _q: str, **params: Any) -> list[dict[str, Any]]:
        """``claim_jobs`` in a transaction of its own whose planner walks ``jobs_claimable``
        in claim order (``CLAIM_PLAN``), sent with its BEGIN and COMMIT in one round trip; with
        ``flow_lock`` first, which serialises claims only while a concurrency limit exists.
        ``_q``: ``claim_jobs_fair`` or ``claim_jobs``."""
        try:
            with self.conn.pipeline():
                for statement in CLAIM_PLAN:
                    self.conn.execute(statement)
                self.conn.execute(QUERIES["flow_lock"])
                cur = self._execute(QUERIES[_q], {"aging_s": PRIORITY_AGING_S, **params})
                self.conn.execute("COMMIT")
            return cur.fetchall()
        except psycopg.Error as exc:
            raise translate(exc, conn=self.conn, during_commit=True) from exc

    def db_now(self) -> float:
        if self.started_at is None:
            row = present(self._execute("SELECT now() AS now", None).fetchone())
            self.started_at = row["now"].timestamp()
        return self.started_at


def caller_tx(conn: Any) -> PgTx:
    """The caller's transaction: statements join it; they commit or roll back with it."""
    if not isinstance(conn, psycopg.Connection):
        raise ConfigurationError(f"conn= must be a psycopg Connection on PostgreSQL, "
                                 f"got {type(conn).__name__}")
    status = conn.info.transaction_status
    if status == TransactionStatus.INERROR:
        raise ConfigurationError("conn= is in a failed transaction; roll it back first")
    if conn.autocommit and status != TransactionStatus.INTRANS:
        raise ConfigurationError("conn= is in autocommit mode outside a transaction; "
                                 "use `with conn.transaction():` around the submit")
    return PgTx(conn, caller=True)
