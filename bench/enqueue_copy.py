"""Bulk child enqueue on PostgreSQL: the engine's one ``insert_jobs`` statement a batch (the
jobs bound as binary arrays, ``unnest``-ed, their submitted events in the same statement)
against ``COPY`` (psycopg's ``cursor.copy``, binary) into a temporary staging table, then one
``INSERT ... SELECT`` from it with the same idempotency checks and events.

Each run enqueues ``--children`` children of one parent, ``--batch`` a transaction, in a fresh
schema; the two ways alternate, and each is reported as the median of ``--runs`` runs.

    python -m bench.enqueue_copy --url postgresql://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Sequence

import psycopg
from psycopg import sql

from tether.core.budget import Budget
from tether.store.base import NewJob
from tether.store.postgres.store import PostgresStore

STAGE = """
CREATE TEMP TABLE IF NOT EXISTS enqueue_stage (
    ord bigint, type text, project text, queue text, priority int, run_after float8,
    max_attempts int, safe_to_retry bool, idempotency_key text, input_config_hash text,
    payload text, budget text, parent_id bigint, version text
) ON COMMIT DELETE ROWS
"""
COLUMNS = ("ord", "type", "project", "queue", "priority", "run_after", "max_attempts",
           "safe_to_retry", "idempotency_key", "input_config_hash", "payload", "budget",
           "parent_id", "version")
TYPES = ("int8", "text", "text", "text", "int4", "float8", "int4", "bool", "text", "text",
         "text", "text", "int8", "text")
INSERT = """
WITH inserted AS (
    INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts,
                      safe_to_retry, idempotency_key, input_config_hash, payload, budget,
                      parent_id, detached, version, event_seq, created_at, updated_at)
    SELECT s.type, s.project, s.queue, 'queued', s.priority,
           coalesce(to_timestamp(s.run_after), now()), s.max_attempts, s.safe_to_retry,
           s.idempotency_key, s.input_config_hash, s.payload::jsonb, s.budget::jsonb,
           s.parent_id, false, s.version, 1, now(), now()
    FROM enqueue_stage s
    WHERE NOT EXISTS (SELECT 1 FROM jobs e WHERE e.idempotency_key IS NOT NULL
                      AND e.idempotency_key = s.idempotency_key AND e.project = s.project)
    ORDER BY s.ord
    ON CONFLICT (project, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, type, project, queue, idempotency_key, created_at, run_after, payload
), events AS (
    INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
    SELECT id, 1, created_at, 'submitted', NULL, 'queued', NULL,
           jsonb_build_object('type', type, 'queue', queue, 'idempotency_key', idempotency_key)
    FROM inserted
)
SELECT id, project, idempotency_key, created_at, run_after, payload FROM inserted
"""


def _children(parent: int, n: int) -> list[NewJob]:
    return [NewJob(type="child", payload_json=str(i), project="p", queue="default",
                   priority=0, run_after=None, max_attempts=3, safe_to_retry=True,
                   idempotency_key=f"child:{parent}:{i}", input_config_hash="h",
                   budget=Budget(), parent_id=parent) for i in range(n)]


def _engine(store: PostgresStore, jobs: Sequence[NewJob], batch: int) -> float:
    started = time.perf_counter()
    for i in range(0, len(jobs), batch):
        store.submit(jobs[i:i + batch])
    return time.perf_counter() - started


def _copy(url: str, jobs: Sequence[NewJob], batch: int) -> float:
    with psycopg.connect(url) as conn:
        conn.execute(STAGE)
        conn.commit()
        started = time.perf_counter()
        for i in range(0, len(jobs), batch):
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy(sql.SQL("COPY enqueue_stage ({}) FROM STDIN (FORMAT BINARY)")
                              .format(sql.SQL(", ").join(map(sql.Identifier, COLUMNS)))) as cp:
                    cp.set_types(list(TYPES))
                    for n, j in enumerate(jobs[i:i + batch]):
                        cp.write_row((n, j.type, j.project, j.queue, j.priority, j.run_after,
                                      j.max_attempts, j.safe_to_retry, j.idempotency_key,
                                      j.input_config_hash, j.payload_json, "{}", j.parent_id,
                                      j.version))
                rows = cur.execute(INSERT).fetchall()
                assert len(rows) == min(batch, len(jobs) - i)
        return time.perf_counter() - started


def _fresh(base: str) -> tuple[str, str]:
    schema = f"enq_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return schema, f"{base}?options=-csearch_path%3D{schema}"


def _drop(base: str, schema: str) -> None:
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--children", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    times: dict[str, list[float]] = {"insert_jobs (unnest)": [], "COPY + INSERT SELECT": []}
    for _ in range(args.runs):
        for way in times:
            schema, url = _fresh(args.url)
            try:
                store = PostgresStore(url)
                try:
                    (parent, _), = store.submit(_children(0, 1))
                    jobs = _children(parent.id, args.children)
                    times[way].append(_engine(store, jobs, args.batch) if way.startswith(
                        "insert_jobs") else _copy(url, jobs, args.batch))
                finally:
                    store.close()
            finally:
                _drop(args.url, schema)
    for way, ts in times.items():
        med = statistics.median(ts)
        print(f"{way:24} median {med:.3f} s ({args.children / med:,.0f} jobs/s) "
              f"runs {', '.join(f'{t:.3f}' for t in ts)}")


if __name__ == "__main__":
    main()
