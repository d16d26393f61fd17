"""The pickup floor on PostgreSQL: how soon a job can start after its submit began, with no
engine around it (W3's yardstick, as the batched probe is W1's).

The same hops tether's pickup makes, each done the least costly way: the submitter commits
one row with one autocommit INSERT (durable, ``synchronous_commit=on``) whose statement
trigger sends a NOTIFY; a worker process's thread LISTENs on its own connection and, on each
notification, hands over to the loop thread, which claims one row (``UPDATE ... FOR UPDATE
SKIP LOCKED ... RETURNING``, committed with ``synchronous_commit=off`` as tether's claims
are) and hands it to a job thread, which writes the start time. Left out, which an engine
must do: events, attempts, leases, payload decoding, any per-job Python work. Submits are
spaced by W3's random gaps, so every hop starts from an idle process, as in W3.

``python -m bench.pickup_floor [SAMPLES]`` runs it alone."""

from __future__ import annotations

import multiprocessing
import queue
import sys
import threading
import time
import uuid
from pathlib import Path

from .backends import SCRATCH, ensure_pg_database
from .measure import StampFile, pickup_latencies
from .probe import _conninfo

SCHEMA_SQL = """
CREATE TABLE floor_jobs (id bigserial PRIMARY KEY, marker text NOT NULL,
                         state text NOT NULL DEFAULT 'queued', worker text);
CREATE INDEX floor_jobs_queued ON floor_jobs (id) WHERE state = 'queued';
CREATE FUNCTION floor_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_notify('floor', ''); RETURN NULL; END $$;
CREATE TRIGGER floor_inserted AFTER INSERT ON floor_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION floor_notify();
"""

CLAIM = """
UPDATE floor_jobs SET state = 'running', worker = %(worker)s
 WHERE id = (SELECT id FROM floor_jobs WHERE state = 'queued' ORDER BY id LIMIT 1
             FOR UPDATE SKIP LOCKED)
RETURNING marker"""


def _worker(url: str, stamps: str, ready) -> None:
    import psycopg
    worker = f"floor-{uuid.uuid4().hex[:6]}"
    wake = threading.Event()
    jobs: queue.SimpleQueue[str] = queue.SimpleQueue()

    def listen() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("LISTEN floor")
            ready.set()
            for _ in conn.notifies():
                wake.set()

    def run_jobs() -> None:
        with open(stamps, "a") as fh:
            while True:
                marker = jobs.get()
                fh.write(f"{marker} {time.time()!r} 0\n")
                fh.flush()

    threading.Thread(target=listen, daemon=True).start()
    threading.Thread(target=run_jobs, daemon=True).start()
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            wake.wait()
            wake.clear()
            while True:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    conn.execute("SET LOCAL synchronous_commit = off")
                    cur = conn.execute(CLAIM, {"worker": worker})
                    conn.execute("COMMIT")
                row = cur.fetchone()
                if row is None:
                    break
                jobs.put(row[0])


def measure(samples: int, gap: tuple[float, float]) -> dict:
    """W3's measurement against the floor's worker, in a fresh schema."""
    import psycopg
    base = ensure_pg_database()
    schema = f"floor_{uuid.uuid4().hex[:8]}"
    url = _conninfo(base, schema)
    stamps = StampFile(Path(SCRATCH) / f"{schema}.stamps")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_worker, args=(url, str(stamps.path), ready), daemon=True)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(SCHEMA_SQL)
            proc.start()
            if not ready.wait(30):
                raise RuntimeError("the pickup floor's worker did not start listening")

            def submit(marker: str) -> None:
                conn.execute("INSERT INTO floor_jobs (marker) VALUES (%s)", (marker,))

            res = pickup_latencies(submit, stamps, samples, gap=gap)
        return res
    finally:
        proc.kill()
        proc.join(10)
        stamps.path.unlink(missing_ok=True)
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    print(measure(n, (0.02, 0.6)))
