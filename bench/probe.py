"""The batched claim/complete probe on PostgreSQL: how fast Python and psycopg can move jobs
through the database at all, with no engine around them (W1's yardstick).

Each process loops: ONE transaction claims up to ``batch`` queued jobs (``FOR UPDATE SKIP
LOCKED``, state, worker, lease, attempt count) and writes a ``started`` event row for each;
ONE transaction marks them succeeded and writes a ``succeeded`` event row for each. Commits
are durable (``synchronous_commit=on``, the server's default). The jobs are bulk-loaded
with one ``INSERT ... SELECT generate_series`` first, outside the timing. Left out, which an
engine must do: payloads, results, heartbeats, budgets, attempt rows, notifications, any
per-job Python work.

``python -m bench.probe [JOBS] [PROCESSES] [BATCH]`` runs it alone."""

from __future__ import annotations

import multiprocessing
import sys
import time
import uuid
from urllib.parse import quote

from .backends import ensure_pg_database

SCHEMA_SQL = """
CREATE TABLE probe_jobs (
    id bigserial PRIMARY KEY, type text NOT NULL, state text NOT NULL,
    worker text, lease_until timestamptz, attempts int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz);
CREATE INDEX probe_jobs_queued ON probe_jobs (id) WHERE state = 'queued';
CREATE TABLE probe_events (
    id bigserial PRIMARY KEY, job_id bigint NOT NULL, kind text NOT NULL,
    at timestamptz NOT NULL DEFAULT now());
"""

CLAIM = """
UPDATE probe_jobs SET state = 'running', worker = %(worker)s, attempts = attempts + 1,
       lease_until = now() + interval '30 seconds', updated_at = now()
 WHERE id IN (SELECT id FROM probe_jobs WHERE state = 'queued' ORDER BY id
              LIMIT %(batch)s FOR UPDATE SKIP LOCKED)
RETURNING id"""
COMPLETE = """
UPDATE probe_jobs SET state = 'succeeded', lease_until = NULL, updated_at = now()
 WHERE id = ANY(%(ids)s)"""
EVENTS = "INSERT INTO probe_events (job_id, kind) SELECT unnest(%(ids)s::bigint[]), %(kind)s"


def _conninfo(url: str, schema: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"


def _work(url: str, batch: int, go, done) -> None:
    import psycopg
    worker = f"probe-{uuid.uuid4().hex[:6]}"
    moved = 0
    with psycopg.connect(url, autocommit=True) as conn:
        go.wait()
        while True:
            with conn.transaction():
                ids = [r[0] for r in conn.execute(CLAIM, {"worker": worker, "batch": batch})]
                if ids:
                    conn.execute(EVENTS, {"ids": ids, "kind": "started"})
            if not ids:
                break
            with conn.transaction():
                conn.execute(COMPLETE, {"ids": ids})
                conn.execute(EVENTS, {"ids": ids, "kind": "succeeded"})
            moved += len(ids)
    done.put(moved)


def measure(jobs: int, processes: int, batch: int) -> dict:
    """One drain of ``jobs`` by ``processes`` probe processes in a fresh schema."""
    import psycopg
    base = ensure_pg_database()
    schema = f"probe_{uuid.uuid4().hex[:8]}"
    url = _conninfo(base, schema)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(SCHEMA_SQL)
            conn.execute("INSERT INTO probe_jobs (type, state) "
                         "SELECT 'noop', 'queued' FROM generate_series(1, %s)", (jobs,))
            conn.execute("ANALYZE probe_jobs")
        ctx = multiprocessing.get_context("spawn")
        go, done = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_work, args=(url, batch, go, done)) for _ in range(processes)]
        for p in procs:
            p.start()
        time.sleep(1.0)  # connections open before the clock starts
        t = time.perf_counter()
        go.set()
        moved = sum(done.get(timeout=600) for _ in procs)
        elapsed = time.perf_counter() - t
        for p in procs:
            p.join(30)
        with psycopg.connect(url, autocommit=True) as conn:
            left = conn.execute("SELECT count(*) FROM probe_jobs WHERE state <> 'succeeded'"
                                ).fetchone()[0]
            events = conn.execute("SELECT count(*) FROM probe_events").fetchone()[0]
        return {"jobs_per_s": moved / elapsed, "jobs": jobs, "moved": moved, "left": left,
                "events": events, "processes": processes, "batch": batch}
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    jobs, processes, batch = (args + [20_000, 1, 100][len(args):])[:3]
    print(measure(jobs, processes, batch))
