"""huey on SQLite: at its defaults (``SqliteHuey(filename)``, a consumer with its default one
worker thread), and at tether's durability (``fsync=True``: ``synchronous=FULL``).

huey has no bulk enqueue: each enqueue is its own committed transaction. A consumer
dequeues by deleting the task row (no lease: a task in flight when a consumer dies is lost),
and stores each result in its kv table, which is what ``done`` counts. The SQLite
``synchronous`` level huey's connections really run with is read back and recorded."""

from __future__ import annotations

import importlib
import os
import sqlite3
import subprocess
import sys
import uuid

from ..backends import SCRATCH, python_env, spawn
from .base import Peer


class HueyPeer(Peer):
    family = "huey"
    backend = "sqlite"
    module = "huey"
    VARIANTS = {
        "defaults": "SqliteHuey(filename) defaults (journal_mode=wal, fsync unset); "
                    "huey_consumer defaults (-k thread -w 1)",
        "durable": "SqliteHuey(filename, fsync=True): synchronous=FULL as tether; "
                   "huey_consumer defaults (-k thread -w 1)",
    }

    def _fsync_env(self) -> dict[str, str]:
        return {"BENCH_HUEY_FSYNC": "1" if self.variant == "durable" else ""}

    def setup(self) -> None:
        SCRATCH.mkdir(parents=True, exist_ok=True)
        self.path = SCRATCH / f"huey-{uuid.uuid4().hex[:6]}.db"
        os.environ["BENCH_HUEY_DB"] = str(self.path)
        os.environ.update(self._fsync_env())
        from . import huey_app
        self.app = importlib.reload(huey_app)
        self._conn = sqlite3.connect(self.path, timeout=60)

    def teardown(self) -> None:
        self._conn.close()
        self.app.huey.storage.close()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass

    def info(self) -> dict:
        level = self.app.huey.storage.conn.execute("PRAGMA synchronous").fetchone()[0]
        return super().info() | {"sqlite_synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL",
                                                        3: "EXTRA"}.get(level, level)}

    def enqueue_noop(self, n: int, batch: int) -> None:
        for _ in range(n):
            self.app.noop()

    def enqueue_single(self, n: int) -> None:
        self.enqueue_noop(n, 1)

    def submit_stamp(self, path: str, marker: str) -> None:
        self.app.stamp(path, marker)

    def done(self) -> int:
        return self._conn.execute("SELECT count(*) FROM kv WHERE queue = 'bench'").fetchone()[0]

    def start_workers(self, k: int) -> list[subprocess.Popen]:
        env = python_env(BENCH_HUEY_DB=str(self.path), **self._fsync_env())
        return [spawn([sys.executable, "-m", "huey.bin.huey_consumer",
                       "bench.peers.huey_app.huey", "-q"],
                      name=f"{self.name}-{i}", env=env) for i in range(k)]
