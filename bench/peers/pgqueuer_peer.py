"""pgqueuer on PostgreSQL: installed with ``pgq install`` (default durability: every table
logged) in a database of its own; bulk enqueue passes lists to ``Queries.enqueue`` (its own
bulk path) over its preferred driver; workers are ``pgqueuer.run`` processes
(bench/peers/pgqueuer_app.py: ``pgq run`` is broken in 1.6.0) at its defaults, and a second
row at the settings of pgqueuer's published benchmark. A finished job is deleted from the
queue table, so ``done`` = jobs enqueued - rows left."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from ..backends import drop_pg_database, fresh_pg_database, python_env, spawn
from .base import Peer


class PgQueuerPeer(Peer):
    family = "pgqueuer"
    backend = "postgres"
    module = "pgqueuer"
    VARIANTS = {
        "defaults": "pgqueuer.run(factory) defaults: batch_size=10, no max_concurrent_tasks "
                    "cap, dequeue_timeout=30s; 1 connection a process",
        "published": "its published benchmark's settings (tools/benchmark.py): 5 PgQueuers "
                     "a process, 5 connections, batch_size=10, no cap (asyncio loop: uvloop "
                     "not installed here)",
    }

    def setup(self) -> None:
        import psycopg

        from .pgqueuer_app import connect
        self.url = fresh_pg_database("pgqueuer")
        out = subprocess.run([sys.executable, "-m", "pgqueuer", "--pg-dsn", self.url, "install"],
                             capture_output=True, text=True, timeout=60, env=python_env())
        if out.returncode != 0:
            raise RuntimeError(f"pgq install failed: {out.stderr[-500:]}")
        self._conn = psycopg.connect(self.url, autocommit=True)
        self.enqueued = 0
        self.loop = asyncio.new_event_loop()
        self.aconn, pgq = self.loop.run_until_complete(connect(self.url))
        self.queries = pgq.queries

    def teardown(self) -> None:
        self._conn.close()
        self.loop.run_until_complete(self.aconn.close())
        self.loop.close()
        drop_pg_database("pgqueuer")

    def _enqueue(self, entrypoints, payloads) -> None:
        self.loop.run_until_complete(self.queries.enqueue(entrypoints, payloads,
                                                          [0] * len(entrypoints)))
        self.enqueued += len(entrypoints)

    def enqueue_noop(self, n: int, batch: int) -> None:
        for i in range(0, n, batch):
            m = min(batch, n - i)
            self._enqueue(["noop"] * m, [None] * m)

    def enqueue_single(self, n: int) -> None:
        for _ in range(n):
            self.loop.run_until_complete(self.queries.enqueue("noop", None))
            self.enqueued += 1

    def submit_stamp(self, path: str, marker: str) -> None:
        self.loop.run_until_complete(self.queries.enqueue("stamp", f"{path}\t{marker}".encode()))

    def info(self) -> dict:
        from .pgqueuer_app import DRIVER
        return super().info() | {"driver": DRIVER}

    def done(self) -> int:
        left = self._conn.execute("SELECT count(*) FROM pgqueuer").fetchone()[0]
        return self.enqueued - left

    def start_workers(self, k: int) -> list[subprocess.Popen]:
        env = python_env(BENCH_PGQUEUER_URL=self.url)
        return [spawn([sys.executable, "-m", "bench.peers.pgqueuer_app", self.variant],
                      name=f"{self.name}-{i}", env=env) for i in range(k)]
