"""huey on SQLite (WAL, fsync=True), consumers with ``-k thread -w <concurrency>``.

huey has no bulk enqueue: each enqueue is its own committed transaction. A consumer
dequeues by deleting the task row (no lease: a task in flight when a consumer dies is lost),
and stores each result in its kv table, which is what ``done`` counts."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid

from ..backends import SCRATCH, python_env, spawn
from .base import Peer


class HueyPeer(Peer):
    name = "huey"
    backend = "sqlite"
    module = "huey"

    def setup(self) -> None:
        SCRATCH.mkdir(parents=True, exist_ok=True)
        self.path = SCRATCH / f"huey-{uuid.uuid4().hex[:6]}.db"
        os.environ["BENCH_HUEY_DB"] = str(self.path)
        import importlib

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

    def enqueue_noop(self, n: int, batch: int) -> None:
        for _ in range(n):
            self.app.noop()

    def enqueue_single(self, n: int) -> None:
        self.enqueue_noop(n, 1)

    def submit_stamp(self, path: str, marker: str) -> None:
        self.app.stamp(path, marker)

    def done(self) -> int:
        return self._conn.execute("SELECT count(*) FROM kv WHERE queue = 'bench'").fetchone()[0]

    def start_workers(self, k: int, concurrency: int) -> list[subprocess.Popen]:
        env = python_env(BENCH_HUEY_DB=str(self.path))
        return [spawn([sys.executable, "-m", "huey.bin.huey_consumer",
                       "bench.peers.huey_app.huey", "-k", "thread", "-w", str(concurrency), "-q"],
                      name=f"huey-{i}", env=env) for i in range(k)]
