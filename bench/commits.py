"""Counting a database's commits from outside the processes that make them.

PostgreSQL: the delta of ``pg_stat_database.xact_commit`` for the benchmark's database, read
on a connection to another database (so the reading adds nothing), after the backends have
flushed their statistics (a backend flushes when it exits, or within about a second of going
idle). It counts every committed transaction, reads included.

SQLite: the commit frames appended to the database's WAL (a frame whose "database size after
commit" field is set ends a write transaction), read as they are written. A checkpoint
restarts the WAL from its start under a new salt; the frames of the old generation that were
not read yet are read first (they keep the old salt until overwritten), so with a poll every
few tens of milliseconds none is missed: a restart overwrites from the start of the file,
far from where the reading left off."""

from __future__ import annotations

import os
import time

from .config import PG_ADMIN_URL

FRAME_HEADER, WAL_HEADER = 24, 32


class PgCommits:
    def __init__(self, dbname: str, admin: str = PG_ADMIN_URL) -> None:
        import psycopg
        self.dbname = dbname
        self._conn = psycopg.connect(admin, autocommit=True)
        self._start = 0

    def _read(self) -> int:
        self._conn.execute("SELECT pg_stat_clear_snapshot()")
        return int(self._conn.execute("SELECT xact_commit FROM pg_stat_database "
                                      "WHERE datname = %s", (self.dbname,)).fetchone()[0])

    def settled(self, quiet_s: float = 1.2, timeout: float = 10.0) -> int:
        """The count once it has stopped moving for ``quiet_s`` (statistics flushed)."""
        value, deadline = self._read(), time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = self._read()
            if now == value:
                break
            value = now
        return value

    def start(self) -> None:
        time.sleep(1.2)  # the idle backends' pending statistics flushed
        self._start = self._read()

    def poll(self) -> None:
        pass

    def stop(self) -> int:
        """Commits since ``start``; call once the processes that made them have exited."""
        commits = self.settled() - self._start
        self._conn.close()
        return commits


class WalCommits:
    def __init__(self, db_path: str | os.PathLike) -> None:
        self.wal = f"{os.fspath(db_path)}-wal"
        self._fd: int | None = None
        self._salt: bytes | None = None
        self._offset = WAL_HEADER
        self._frame = 0
        self.commits = 0
        self.restarts = 0

    def _scan(self, salt: bytes, count: bool) -> None:
        while True:
            head = os.pread(self._fd, FRAME_HEADER, self._offset)
            if len(head) < FRAME_HEADER or head[8:16] != salt:
                return
            if count and head[4:8] != b"\0\0\0\0":
                self.commits += 1
            self._offset += self._frame

    def poll(self, count: bool = True) -> None:
        if self._fd is None:
            try:
                self._fd = os.open(self.wal, os.O_RDONLY)
            except FileNotFoundError:
                return
        head = os.pread(self._fd, WAL_HEADER, 0)
        if len(head) < WAL_HEADER:
            return
        self._frame = FRAME_HEADER + int.from_bytes(head[8:12], "big")
        salt = head[16:24]
        if self._salt is not None and salt != self._salt:
            self._scan(self._salt, count)  # the old generation's unread frames
            self.restarts += 1
            self._offset = WAL_HEADER
        self._salt = salt
        self._scan(salt, count)

    def start(self) -> None:
        self.poll(count=False)  # what is already there is not counted

    def stop(self) -> int:
        self.poll()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        return self.commits
