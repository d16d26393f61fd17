"""huey's side of the benchmark: a SqliteHuey in WAL with fsync (synchronous=FULL), like
tether's SQLite default. Loaded by ``huey_consumer bench.peers.huey_app.huey``."""

from __future__ import annotations

import os
import time

from huey import SqliteHuey

huey = SqliteHuey("bench", filename=os.environ.get("BENCH_HUEY_DB", "huey-bench.db"),
                  fsync=True, journal_mode="wal")


@huey.task()
def noop():
    return 1  # a stored result, so completions can be counted (None is not stored)


@huey.task()
def stamp(path, marker):
    now = time.time()
    with open(path, "a") as fh:
        fh.write(f"{marker} {now!r} {os.getpid()}\n")
    return 1
