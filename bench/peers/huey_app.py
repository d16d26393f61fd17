"""huey's side of the benchmark, loaded by ``huey_consumer bench.peers.huey_app.huey``.

``BENCH_HUEY_FSYNC`` unset: ``SqliteHuey(filename)`` as huey's docs show it, every other
argument at its default (``journal_mode="wal"``, ``fsync=None``: huey leaves SQLite's
``synchronous`` as the library was built, which ``HueyPeer.info`` records). ``1``:
``fsync=True`` (``synchronous=FULL``), tether's durability."""

from __future__ import annotations

import os
import time

from huey import SqliteHuey

_options = {"fsync": True} if os.environ.get("BENCH_HUEY_FSYNC") == "1" else {}
huey = SqliteHuey("bench", filename=os.environ.get("BENCH_HUEY_DB", "huey-bench.db"), **_options)


@huey.task()
def noop():
    return 1  # a stored result, so completions can be counted (None is not stored)


@huey.task()
def stamp(path, marker):
    now = time.time()
    with open(path, "a") as fh:
        fh.write(f"{marker} {now!r} {os.getpid()}\n")
    return 1
