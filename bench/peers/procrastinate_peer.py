"""procrastinate on PostgreSQL: its schema in a database of its own, ``batch_defer`` for bulk
enqueue, worker processes at its defaults (``run_worker()``: one job at a time). Jobs are kept
after success (its default), so ``done`` counts status 'succeeded'."""

from __future__ import annotations

import os
import subprocess
import sys

from ..backends import drop_pg_database, fresh_pg_database, python_env, spawn
from .base import Peer


class ProcrastinatePeer(Peer):
    family = "procrastinate"
    VARIANTS = {"defaults": "app.run_worker() defaults: concurrency=1, LISTEN/NOTIFY on, "
                            "jobs kept after success"}
    backend = "postgres"
    module = "procrastinate"

    def setup(self) -> None:
        import importlib

        import psycopg
        self.url = fresh_pg_database("procrastinate")
        os.environ["BENCH_PROCRASTINATE_URL"] = self.url
        from . import procrastinate_app
        self.mod = importlib.reload(procrastinate_app)
        self.mod.app.open()
        self.mod.app.schema_manager.apply_schema()
        self._conn = psycopg.connect(self.url, autocommit=True)

    def teardown(self) -> None:
        self._conn.close()
        try:
            self.mod.app.close()
        except Exception:  # noqa: BLE001
            pass
        drop_pg_database("procrastinate")

    def enqueue_noop(self, n: int, batch: int) -> None:
        for i in range(0, n, batch):
            self.mod.noop.batch_defer(*[{} for _ in range(min(batch, n - i))])

    def enqueue_single(self, n: int) -> None:
        for _ in range(n):
            self.mod.noop.defer()

    def submit_stamp(self, path: str, marker: str) -> None:
        self.mod.stamp.defer(path=path, marker=marker)

    def done(self) -> int:
        return self._conn.execute("SELECT count(*) FROM procrastinate_jobs "
                                  "WHERE status = 'succeeded'").fetchone()[0]

    def start_workers(self, k: int) -> list[subprocess.Popen]:
        env = python_env(BENCH_PROCRASTINATE_URL=self.url)
        return [spawn([sys.executable, "-m", "bench.peers.procrastinate_app"],
                      name=f"procrastinate-{i}", env=env) for i in range(k)]
