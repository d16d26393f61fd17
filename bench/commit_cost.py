"""What W4's durable commits cost on SQLite by themselves: the fastest any engine that keeps
tether's promises could make W4's calls on this disk, with no CPU spent at all.

Every call is two durable writes — its reservation before the provider is asked, its
settlement after — and with ``concurrency`` calls in flight a commit can carry at most
``concurrency`` of them, so ``concurrency`` calls need at least one reservation commit and one
settlement commit, one after the other (one SQLite file has one writer). A commit's fsync
costs more the more pages it writes, so both are measured here, on the benchmark's disk:

1. the WAL pages one batch of ``concurrency`` reservations writes, and one batch of their
   settlements, through ``Store.account`` on a real store (frames appended to the WAL);
2. the time of a ``synchronous=FULL`` commit that writes that many pages (one page in each
   of that many tables, so the count is exact);
3. the bound: ``concurrency / (reservation commit + settlement commit)`` calls/s.

W4's target (calls/s above the one-row-commit rate) is only within reach if this bound is
well above that rate: every microsecond of real work per call comes on top.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import time
import uuid

from .backends import SCRATCH

WAL_HEADER, FRAME_HEADER = 32, 24


def _running_job(app):
    app.register("w4-commit-cost", lambda ctx, payload: None)
    job = app.submit("w4-commit-cost", {})
    (claim,) = app.store.claim("commit-cost", queues=None, limit=1, lease_ttl=60)
    app.store.start(job.id, claim.attempt)
    return job, claim.attempt


def batch_pages(concurrency: int, batches: int) -> dict:
    """Median WAL frames per batch of ``concurrency`` reservations and of their settlements,
    with answers, usage and prices as W4's simulated calls have them."""
    from tether import Tether
    from tether.core.serialize import dumps
    from tether.core.usage import Estimate
    from tether.providers.simulated import SimulatedProvider
    from tether.store.base import CallReserve, CallSettle

    folder = SCRATCH / f"commit-cost-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    app = Tether(database_url=f"sqlite:///{folder}/tether.db")
    try:
        job, attempt = _running_job(app)
        price = app.profile_for(job).price("simulated", "sim-small")
        provider = SimulatedProvider(folder / "bill", latency_s=0)
        store = app.store
        writer = store._writer  # opened by the claim and start above
        writer.execute("PRAGMA wal_autocheckpoint = 0")  # the WAL only grows: frames count
        page = writer.execute("PRAGMA page_size").fetchone()[0]
        wal = f"{store.path}-wal"

        def frames() -> int:
            return (os.path.getsize(wal) - WAL_HEADER) // (page + FRAME_HEADER)

        reserve, settle, n = [], [], 0
        for b in range(batches + 2):  # the first two warm the tables up
            keys = [f"c{n + i}" for i in range(concurrency)]
            n += concurrency
            ops = []
            for key in keys:
                est = Estimate(input_text=f"item {key}", max_output_tokens=64)
                ops.append(CallReserve(key, None, "simulated", "sim-small",
                                       price.reservation(est)))
            before = frames()
            _ok(store.account(job.id, attempt, ops))
            middle = frames()
            ops = []
            for key in keys:
                answer = provider.complete(f"item {key}", key=key, max_tokens=64)
                ops.append(CallSettle(key, answer.usage, price, "default",
                                      dumps(answer.value), False))
            _ok(store.account(job.id, attempt, ops))
            if b >= 2:
                reserve.append(middle - before)
                settle.append(frames() - middle)
        return {"page_size": page, "reserve_pages": statistics.median(reserve),
                "settle_pages": statistics.median(settle)}
    finally:
        app.close()
        shutil.rmtree(folder)


def _ok(outcomes) -> None:
    for _, error in outcomes:
        if error is not None:
            raise error


def commit_us(page_counts: list[int], commits: int) -> dict[int, tuple[float, float]]:
    """For each page count ``p``: the median time of a ``synchronous=FULL`` WAL commit that
    rewrites exactly ``p`` pages (one single-page table each, its row updated in place), and
    the WAL frames it wrote. The sizes are timed interleaved, commit by commit, so a slow
    phase of the shared disk weighs on each alike."""
    folder = SCRATCH / f"commit-pages-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "pages.db", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        fill = page * 3 // 4  # one row fills most of its table's only page
        for i in range(max(page_counts)):
            conn.execute(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, v BLOB)")
            conn.execute(f"INSERT INTO t{i} (id, v) VALUES (1, zeroblob({fill}))")
        wal = folder / "pages.db-wal"

        def commit(pages: int) -> float:
            t = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            for i in range(pages):
                conn.execute(f"UPDATE t{i} SET v = randomblob({fill}) WHERE id = 1")
            conn.execute("COMMIT")
            return time.perf_counter() - t

        frames = {}
        for p in page_counts:  # the WAL only grows here: what one commit appends is exact
            start = os.path.getsize(wal)
            for _ in range(10):
                commit(p)
            frames[p] = (os.path.getsize(wal) - start) / (page + FRAME_HEADER) / 10
        # Timed as a store runs: the WAL checkpointed now and then and written over again
        # (appending to an ever longer WAL would make every fsync also flush its new size).
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA wal_autocheckpoint = 1000")
        times: dict[int, list[float]] = {p: [] for p in page_counts}
        for _ in range(commits):
            for p in page_counts:
                times[p].append(commit(p))
        return {p: (statistics.median(times[p]) * 1e6, frames[p]) for p in page_counts}
    finally:
        conn.close()
        shutil.rmtree(folder)


def measure(concurrency: int, batches: int = 50, commits: int = 300) -> dict:
    """Pages per batch, the commit time of each, and the bound they set on W4 (calls/s)."""
    pages = batch_pages(concurrency, batches)
    out = dict(pages, concurrency=concurrency)
    counts = {"reserve": max(1, round(pages["reserve_pages"])),
              "settle": max(1, round(pages["settle_pages"])), "one_page": 1}
    timed = commit_us(sorted(set(counts.values())), commits)
    for name, count in counts.items():
        out[f"{name}_commit_us"], out[f"{name}_commit_frames"] = timed[count]
    pair = out["reserve_commit_us"] + out["settle_commit_us"]
    out["bound_calls_per_s"] = concurrency / pair * 1e6
    return out


if __name__ == "__main__":  # python -m bench.commit_cost
    print(json.dumps(measure(8), indent=2))
