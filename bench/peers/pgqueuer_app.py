"""pgqueuer's side of the benchmark: its asyncpg driver when asyncpg is installed (pgqueuer's
primary driver), else its psycopg driver (whose LISTEN loop holds the connection for up to
1 s at a time, which shows as ~1 s pickup latency); tables at pgqueuer's default durability
('durable': all logged).

Run by ``python -m pgqueuer run bench.peers.pgqueuer_app:factory``."""

from __future__ import annotations

import os
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


@asynccontextmanager
async def factory():
    url = os.environ["BENCH_PGQUEUER_URL"]
    if DRIVER == "asyncpg":
        import asyncpg
        conn = await asyncpg.connect(url)
        pgq = PgQueuer.from_asyncpg_connection(conn)
    else:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        pgq = PgQueuer.from_psycopg_connection(conn)
    try:

        @pgq.entrypoint("noop")
        async def noop(job: Job) -> None:
            return None

        @pgq.entrypoint("stamp")
        async def stamp(job: Job) -> None:
            path, marker = job.payload.decode().split("\t")
            now = time.time()
            with open(path, "a") as fh:
                fh.write(f"{marker} {now!r} {os.getpid()}\n")

        yield pgq
    finally:
        await conn.close()


def main(argv: list[str]) -> None:
    """One worker process. ``pgq run`` itself cannot be used: in pgqueuer 1.6.0 its
    ``--log-level`` handling passes a str where an enum is expected and every start fails
    (AttributeError: 'str' object has no attribute 'name'), so the documented
    ``pgqueuer.run`` entry point is called instead, with the same options."""
    import asyncio
    import logging
    from datetime import timedelta

    import pgqueuer

    logging.basicConfig(level=logging.WARNING)
    concurrency = int(argv[0]) if argv else 8
    asyncio.run(pgqueuer.run(factory, batch_size=max(1, concurrency // 2),
                             max_concurrent_tasks=concurrency,
                             dequeue_timeout=timedelta(seconds=30)))


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
