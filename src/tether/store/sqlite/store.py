"""SQLite store: the embedded default. One file, many processes.

Durability and concurrency settings are the point of this module: WAL so readers never block
the writer, ``synchronous=FULL`` so a committed transition survives power loss (``NORMAL`` is an
opt-in trade), ``busy_timeout`` so contention waits instead of failing, and ``BEGIN IMMEDIATE``
for every write so a transaction never discovers mid-way that it cannot write
("database is locked"). sqlite3's own transaction handling is off.

Connections: every write of a process runs on ONE writer connection, taken under a mutex for
the whole transaction; reads use a connection per thread. In-process writers therefore queue on
a lock instead of on SQLite's busy handler, and the writer's page cache stays warm: SQLite
drops a connection's cache whenever another connection has committed, so writes spread over
many threads' connections re-read their pages on every transaction.
"""

from __future__ import annotations

import errno
import os
import random
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from ...clock import SYSTEM_CLOCK, Clock
from ...errors import ConfigurationError, StorageFull, StoreCorrupt, StoreError
from ...wakeup import Wakeup
from ..base import FinishSignal
from ..sql import SQLStore
from ..tx import present
from .functions import install as install_functions
from .location import path_from_url, require_database, require_directory
from .schema import apply_migrations
from .signal import DataVersionSignal
from .tx import SQLiteTx, translate

HERE = Path(__file__).parent
SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")


class SQLiteStore(SQLStore):
    """``sqlite:///path/to/tether.db``; options: ``synchronous`` (FULL), ``busy_timeout_ms``,
    ``create`` (default True: make the file and apply migrations on open; False: open an
    existing tether database only, ``NoDatabase`` otherwise; see ``location.py``)."""

    group_commit = True
    """One writer at a time: a worker's writes share commits (see worker/committer.py)."""

    _prune_batch = 250
    _prune_yield = 1.0
    """Prune holds the one writer lock a batch at a time, then leaves it as long to the
    writers waiting for it (bench/README.md measures claims during a prune)."""

    reader_cache_kib = 256
    """Page cache of each thread's read connection. SQLite discards a connection's cache
    whenever another connection has committed, and in a worker the writer commits all the
    time, so a reader's cache is mostly refilled, not reused: a small one keeps a worker's
    memory flat as the database grows."""

    writer_cache_kib = 1024
    """Page cache of the writer connection (SQLite's default is 2 MiB). The hot pages of
    claims and finishes (the claim index, the newest job, event and attempt pages) fit with
    room to spare."""

    wake_poll_s = 0.005
    """How often an idle worker looks for other processes' commits (a cheap in-memory read)."""

    def __init__(self, url: str = "sqlite:///./tether.db", *, clock: Clock | None = None,
                 synchronous: str | None = None, busy_timeout_ms: int = 60_000,
                 migrate: bool = True, create: bool = True,
                 check_integrity: bool = False) -> None:
        self.url = url
        self.path = path_from_url(url)
        self.clock = clock or SYSTEM_CLOCK
        self.synchronous = (synchronous or os.environ.get("TETHER_SQLITE_SYNCHRONOUS")
                            or "FULL").upper()
        if self.synchronous not in SYNC_MODES:
            raise ConfigurationError(f"synchronous must be one of {SYNC_MODES}")
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._writing = threading.Lock()  # held for a whole write transaction
        if create:
            require_directory(self.path, url)
        else:
            require_database(self.path, url, HERE / "migrations")
        if check_integrity:
            self.check_integrity()
        if migrate and create:
            self.migrate()

    # --- connections and transactions ---------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = None
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=self.busy_timeout_ms / 1000)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            install_functions(conn)
        except sqlite3.Error as exc:  # e.g. not a database: one clear error
            if conn is not None:
                conn.close()
            raise translate(exc) from exc
        with self._lock:
            self._all.append(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection for reads; inside a write transaction, the writer."""
        if getattr(self._local, "depth", 0):
            return self._writer  # type: ignore[return-value]
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
            conn.execute(f"PRAGMA cache_size = -{self.reader_cache_kib}")
        return conn

    def _writer_conn(self) -> sqlite3.Connection:
        """(``_writing`` held) The process's write connection. Once set up, its busy timeout
        is 0 for good: it only ever waits for the write lock in ``_begin``'s own loop."""
        if self._writer is None:
            conn = self._connect()
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute(f"PRAGMA cache_size = -{self.writer_cache_kib}")
            self._writer = conn
        return self._writer

    @contextmanager
    def _write(self, conn: Any = None, *, savepoints: bool = True) -> Iterator[SQLiteTx]:
        if conn is not None:
            # The caller's transaction: enqueue commits or rolls back with their own rows.
            if not conn.in_transaction:
                raise ConfigurationError("conn= must be inside an open transaction "
                                         "(BEGIN IMMEDIATE ...)")
            prev = conn.row_factory
            conn.row_factory = sqlite3.Row
            try:
                yield SQLiteTx(conn)
            finally:
                conn.row_factory = prev
            return
        depth = getattr(self._local, "depth", 0)
        if depth:  # inside transaction(): join it, in a savepoint of our own if it wants them
            c = present(self._writer)
            if not c.in_transaction:
                raise self._aborted()
            if self._local.savepoints:
                yield from self._savepoint(c, depth)
            else:
                yield SQLiteTx(c)
            return
        with self._writing:
            c = self._writer_conn()
            with self._immediate(c):
                self._local.depth = 1
                self._local.savepoints = savepoints
                self._local.abort = None
                try:
                    yield SQLiteTx(c)
                finally:
                    self._local.depth = 0

    @contextmanager
    def transaction(self, *, savepoints: bool = True) -> Iterator[None]:
        """One write transaction: store writes made on this thread inside it join it, each in
        its own savepoint (unless ``savepoints=False``: then a failing write must abort the
        whole transaction), and all commit together (group commit)."""
        with self._write(savepoints=savepoints):
            yield

    @contextmanager
    def _immediate(self, c: sqlite3.Connection) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` on ``c``: rolled back on any error, SQLite's
        own errors translated."""
        self._begin(c)
        try:
            yield
            if not c.in_transaction:
                raise self._aborted()
        except sqlite3.Error as exc:
            self._rollback(c)
            raise self._failed(c, translate(exc)) from exc
        except StorageFull as exc:  # raised in a savepoint, already translated
            self._rollback(c)
            self._failed(c, exc)
            raise
        except BaseException:
            self._rollback(c)
            raise
        try:
            c.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback(c)
            raise self._failed(c, translate(exc)) from exc

    @staticmethod
    def _failed(c: sqlite3.Connection, error: StoreError) -> StoreError:
        """``error``, a failed write's. On a full disk, also checkpoint and truncate the WAL:
        SQLite checkpoints only after a commit, which a full disk refuses, so frames already
        in the WAL would keep their space from the next write for as long as the disk is full."""
        if isinstance(error, StorageFull) and not c.in_transaction:
            try:
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error:
                pass
        return error

    def _savepoint(self, c: sqlite3.Connection, depth: int) -> Iterator[SQLiteTx]:
        name = f"tether_{depth}"
        c.execute(f"SAVEPOINT {name}")
        self._local.depth = depth + 1
        try:
            yield SQLiteTx(c)
        except BaseException as exc:
            error = translate(exc) if isinstance(exc, sqlite3.Error) else exc
            if c.in_transaction:
                c.execute(f"ROLLBACK TO {name}")
                c.execute(f"RELEASE {name}")
            else:  # SQLite rolled the whole transaction back (a full disk mid-statement)
                self._local.abort = error
            if error is exc:
                raise
            raise error from exc
        else:
            c.execute(f"RELEASE {name}")
        finally:
            self._local.depth = depth

    def _aborted(self) -> StoreError:
        """The error for a write that would join a transaction SQLite has already rolled back
        by itself: the same kind as the error that did it, so that no later write of that
        transaction runs outside it, and none of its callers takes its writes for committed."""
        cause = getattr(self._local, "abort", None)
        kind = type(cause) if isinstance(cause, StoreError) else StoreError
        return kind("SQLite rolled this transaction back after an earlier write failed"
                    + (f": {cause}" if cause is not None else ""))

    def _begin(self, c: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE, waiting for the write lock in short jittered steps (0.2 ms
        doubling to 5 ms). SQLite's own busy handler sleeps 1, 2, 5, 10 ... 100 ms between
        tries, far longer than a tether write holds the lock, so writers of several processes
        would queue on sleeps. (Writers of one process queue on ``_writing`` before they get
        here.) ``c`` is the writer, whose busy timeout is 0."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        delay = 0.0002
        while True:
            try:
                c.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise translate(exc) from exc
                if time.monotonic() > deadline:
                    raise StoreError(f"SQLite stayed locked for {self.busy_timeout_ms} ms"
                                     ) from exc
                time.sleep(random.uniform(0.5, 1.0) * delay)
                delay = min(delay * 2, 0.005)

    @staticmethod
    def _rollback(c: sqlite3.Connection) -> None:
        if c.in_transaction:
            try:
                c.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    @contextmanager
    def _read(self) -> Iterator[SQLiteTx]:
        c = self._conn()
        try:
            yield SQLiteTx(c)
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    def wait_for_work(self, timeout: float, wake: threading.Event | Wakeup | None = None) -> bool:
        """Block until another connection commits (a job may have become claimable), ``wake``
        is set, or ``timeout`` passes. True: something committed. Watches ``PRAGMA
        data_version``, which costs no disk I/O, every ``wake_poll_s``; the version seen last
        time is remembered, so a commit that landed between two waits wakes the next at once."""
        conn = self._conn()
        seen = getattr(self._local, "data_version", None)
        deadline = time.monotonic() + timeout
        while True:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if seen is not None and version != seen:
                self._local.data_version = version
                return True
            seen = version
            self._local.data_version = version
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            step = min(self.wake_poll_s, left)
            if wake is not None:
                if wake.wait(step):
                    return False
            else:
                time.sleep(step)

    def finish_signal(self) -> FinishSignal:
        """SQLite has no NOTIFY: any commit of another connection may have finished a job."""
        return DataVersionSignal(self)

    def event_signal(self) -> FinishSignal:
        """Any commit of another connection may have written events."""
        return DataVersionSignal(self)

    def _now(self, tx: Any, now: float | None) -> float:
        return self.clock.time() if now is None else now

    def now(self) -> float:
        return self.clock.time()

    # --- lifecycle ----------------------------------------------------------------------------

    def migrate(self) -> list[int]:
        """Apply pending migrations; each in its own transaction with its version row."""
        with self._writing:
            return self._migrate(self._writer_conn())

    def _migrate(self, c: sqlite3.Connection) -> list[int]:
        return apply_migrations(c, HERE / "migrations", self._immediate)

    def check_integrity(self) -> None:
        """``PRAGMA quick_check`` at start: a corrupt file is reported once, clearly."""
        if not os.path.exists(self.path):
            return
        try:
            row = self._conn().execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as exc:
            raise translate(exc) from exc
        if row[0] != "ok":
            raise StoreCorrupt(f"SQLite integrity check failed for {self.path}: {row[0]}")

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for c in conns:
            try:
                c.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()
        self._writer = None


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG)
