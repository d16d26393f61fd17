"""pgqueuer's side of the benchmark: one worker process, its asyncpg driver when asyncpg is
installed (pgqueuer's primary driver), else its psycopg driver (whose LISTEN loop holds the
connection for up to 1 s at a time, which shows as ~1 s pickup latency); tables at
pgqueuer's default durability ('durable': all logged).

``python -m bench.peers.pgqueuer_app defaults``: ``pgqueuer.run(factory)`` with every option
at its default (``batch_size=10``, no ``max_concurrent_tasks`` cap, ``dequeue_timeout=30 s``).
``python -m bench.peers.pgqueuer_app published``: the settings of pgqueuer's own benchmark
(``tools/benchmark.py``, docs/benchmark.md): 5 dequeue tasks in the process, each a
``PgQueuer`` on a connection of its own, ``batch_size=10``, no cap."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from contextlib import asynccontextmanager

import psycopg
from pgqueuer import PgQueuer
from pgqueuer.models import Job

try:
    import asyncpg  # noqa: F401
    DRIVER = "asyncpg"
except ImportError:
    DRIVER = "psycopg"

PUBLISHED_DEQUEUE_TASKS = 5
PUBLISHED_BATCH_SIZE = 10


async def connect(url: str):
    """A connection with pgqueuer's preferred driver, and the PgQueuer over it."""
    if DRIVER == "asyncpg":
        import asyncpg
        conn = await asyncpg.connect(url)
        return conn, PgQueuer.from_asyncpg_connection(conn)
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    return conn, PgQueuer.from_psycopg_connection(conn)


def register(pgq: PgQueuer) -> PgQueuer:
    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        return None

    @pgq.entrypoint("stamp")
    async def stamp(job: Job) -> None:
        path, marker = job.payload.decode().split("\t")
        now = time.time()
        with open(path, "a") as fh:
            fh.write(f"{marker} {now!r} {os.getpid()}\n")

    return pgq


@asynccontextmanager
async def factory():
    conn, pgq = await connect(os.environ["BENCH_PGQUEUER_URL"])
    try:
        yield register(pgq)
    finally:
        await conn.close()


async def published() -> None:
    """pgqueuer's benchmark consumer: several PgQueuers run side by side in one loop."""
    url = os.environ["BENCH_PGQUEUER_URL"]
    pairs = [await connect(url) for _ in range(PUBLISHED_DEQUEUE_TASKS)]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: [pgq.shutdown.set() for _, pgq in pairs])
    try:
        await asyncio.gather(*(register(pgq).run(batch_size=PUBLISHED_BATCH_SIZE)
                               for _, pgq in pairs))
    finally:
        for conn, _ in pairs:
            await conn.close()


def main(argv: list[str]) -> None:
    """One worker process. ``pgq run`` itself cannot be used: in pgqueuer 1.6.0 its
    ``--log-level`` handling passes a str where an enum is expected and every start fails
    (AttributeError: 'str' object has no attribute 'name'), so the documented
    ``pgqueuer.run`` entry point is called instead, with its defaults."""
    import logging

    import pgqueuer

    logging.basicConfig(level=logging.WARNING)
    variant = argv[0] if argv else "defaults"
    if variant == "published":
        asyncio.run(published())
    else:
        asyncio.run(pgqueuer.run(factory))


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
