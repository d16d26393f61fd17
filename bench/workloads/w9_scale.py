"""W9 scale-out on PostgreSQL: the same bulk load drained by 1, 2, 4, 8, 16 worker processes
(``scale_workers``, each ``--concurrency scale_concurrency``), as many machines would run them.

Each step, in a database of its own (so ``pg_stat_activity`` counts only this step):

- ``scale_jobs`` no-op jobs are enqueued (``submit_many``, 1,000 a transaction) into queue
  ``w9``, which is then paused; the worker processes start and register; the queue is resumed.
  Throughput counts from the first completion seen to the last, as W1 does.
- Claim latency under load: from the first completion on, marker jobs (``stamp``) are
  submitted one at a time, a random ``scale_marker_gap_s`` after the previous one started,
  at priority -1, ahead of the bulk load's 0 (lower runs first). A marker is claimed by the
  next claim any worker makes, whatever the queue depth, so latency = the time a claim takes
  to reach a waiting job while every worker is busy (its next claim, plus the jobs its
  worker already holds: ``worker/prefetch.py``), not the time to work through the queue.
  Latency (pickup) = the start time the job writes minus the time just before ``submit``,
  split at the claim statement's ``now()`` (``job_attempts.claimed_at``) into "to claim" and
  "held"; only markers that started before the drain ended count.
- ``pg_stat_activity`` is sampled every ``scale_sample_s`` from another connection
  (``bench/pgactivity.py``): the most connections at once, and backends waiting on locks.
- The connection bound: a worker's pool is ``TETHER_PG_POOL_MAX`` (default 10) as the workers
  see it, plus its LISTEN connection, so n workers hold at most n x (pool + 1).
- Machine CPU busy % over the drain (``/proc/stat``): on a small machine the big steps are
  CPU-bound, and this says so.

``scale_prefetch`` >= 0 starts the workers with ``--prefetch`` (a diagnostic: how much of the
latency and of the lock waits the fetch-ahead accounts for).
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..apps import make_app
from ..backends import SCRATCH, TetherDB, spawn, stop, wait_for
from ..measure import StampFile, drain
from ..pgactivity import ActivitySampler
from ..stats import percentile, summarize

KEY = "W9"
TITLE = "scale-out on PostgreSQL: throughput and claim latency vs worker processes"
QUEUE = "w9"
BULK_PRIORITY = 0
MARKER_PRIORITY = -1
WORKER_APP = "tether-w9-worker"


def pool_per_worker() -> dict:
    """The connections one worker process may hold: its store's pool (``TETHER_PG_POOL_MAX``
    in the environment the workers inherit, default 10) and the LISTEN connection."""
    from tether.store.postgres.pooler import max_size_from_env
    pool = max_size_from_env()
    return {"pool_max_size": pool, "listener": 1, "per_worker": pool + 1}


def cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine so far (``/proc/stat``)."""
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


class Markers:
    """Submits stamp jobs one at a time from a thread until stopped; keeps (job id, submit
    time, start time)."""

    def __init__(self, app, stamps: StampFile, gap: tuple[float, float], *,
                 timeout: float = 10.0) -> None:
        self.app, self.stamps, self.gap, self.timeout = app, stamps, gap, timeout
        self.seen: list[tuple[int, float, float]] = []
        self.lost = 0
        self.begin = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="w9-markers", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        rng = random.Random(9)
        self.begin.wait()
        i = 0
        while not self._stop.is_set():
            marker = f"m{i}-{rng.randrange(1 << 30)}"
            i += 1
            t = time.time()
            job = self.app.submit("stamp", {"path": str(self.stamps.path), "marker": marker},
                                  queue=QUEUE, priority=MARKER_PRIORITY)
            got = self.stamps.wait(marker, self.timeout, interval=0.002)
            if got is None:
                self.lost += 1
            else:
                self.seen.append((job.id, t, got[0]))
            self._stop.wait(rng.uniform(*self.gap))

    def stop(self) -> None:
        self.begin.set()
        self._stop.set()
        self._thread.join(timeout=self.timeout + 5)


def worker(url: str, sz, *, name: str) -> subprocess.Popen:
    """A worker process as W1's, with ``--prefetch scale_prefetch`` when it is >= 0 (a
    diagnostic: -1 keeps the worker's own fetch-ahead)."""
    cmd = [sys.executable, "-m", "tether.worker", "--app", "bench.apps:app", "--database-url",
           url, "--concurrency", str(sz.scale_concurrency), "--lease-ttl", "30",
           "--poll-interval", str(sz.poll_interval)]
    if sz.scale_prefetch >= 0:
        cmd += ["--prefetch", str(sz.scale_prefetch)]
    return spawn(cmd, name=name)


def step(sz, processes: int) -> dict:
    db = TetherDB("postgres", f"w9n{processes}", own_database=True)
    app = make_app(db.url)
    stamps = StampFile(SCRATCH / f"w9-{db.label}.stamps")
    worker_url = f"{db.url}{'&' if '?' in db.url else '?'}application_name={WORKER_APP}"
    procs: list = []
    markers: Markers | None = None
    sampler = ActivitySampler(db.dbname, worker_app=WORKER_APP, interval=sz.scale_sample_s)
    conn = None
    try:
        # opened before the workers: at 16 of them a busy server may have no connection left
        conn = db.connect()
        t = time.perf_counter()
        for i in range(0, sz.scale_jobs, 1_000):
            app.submit_many([{"type": "noop", "queue": QUEUE, "priority": BULK_PRIORITY}
                             for _ in range(min(1_000, sz.scale_jobs - i))])
        enqueue_s = time.perf_counter() - t
        app.pause_queue(QUEUE)  # no worker runs yet: nothing was claimed
        procs = [worker(worker_url, sz, name=f"w9-{processes}-{i}") for i in range(processes)]
        registered = wait_for(
            lambda: int(db.scalar("SELECT count(*) FROM workers")) >= processes,
            timeout=120, interval=0.1)
        if not registered:
            return {"error": f"{processes} worker processes did not register within 120 s"}
        markers = Markers(app, stamps, sz.scale_marker_gap_s)
        sampler.start()
        busy0, total0 = cpu_busy()
        app.resume_queue(QUEUE)

        def done() -> int:
            n = int(db.scalar("SELECT count(*) FROM jobs WHERE state = 'succeeded' "
                              "AND type = 'noop'"))
            if n:
                markers.begin.set()
            return n

        res = drain(done, sz.scale_jobs, timeout=sz.scale_timeout_s, poll=0.02, procs=procs)
        ended = time.time()
        busy1, total1 = cpu_busy()
        markers.stop()
        activity = sampler.stop()
        kept = [m for m in markers.seen if m[2] <= ended]
        claimed = dict(conn.execute(  # the database's clock: the claim statement's now()
            "SELECT job_id, extract(epoch FROM claimed_at)::float8 FROM job_attempts "
            "WHERE attempt = 1 AND job_id = ANY(%s)", ([m[0] for m in kept],)).fetchall())
    finally:
        if markers is not None:
            markers.stop()
        sampler.stop()
        stop(procs)
        if conn is not None:
            conn.close()
        app.close()
        db.drop()
        stamps.path.unlink(missing_ok=True)
    lat = [start - sent for _, sent, start in kept]
    to_claim = [claimed[i] - sent for i, sent, _ in kept if i in claimed]
    held = [start - claimed[i] for i, _, start in kept if i in claimed]
    bound = pool_per_worker()["per_worker"] * processes
    return {**res, "workers": processes, "concurrency": sz.scale_concurrency,
           "prefetch": None if sz.scale_prefetch < 0 else sz.scale_prefetch,
           "enqueue_jobs_per_s": sz.scale_jobs / enqueue_s,
           "pickup_p50_ms": _ms(percentile(lat, 50)), "pickup_p99_ms": _ms(percentile(lat, 99)),
           "pickup_max_ms": _ms(max(lat) if lat else None),
           "to_claim_p50_ms": _ms(percentile(to_claim, 50)),
           "to_claim_p99_ms": _ms(percentile(to_claim, 99)),
           "held_p50_ms": _ms(percentile(held, 50)), "held_p99_ms": _ms(percentile(held, 99)),
           "markers": len(lat), "markers_after_drain": len(markers.seen) - len(lat),
           "markers_lost": markers.lost,
           "cpu_busy_pct": 100.0 * (busy1 - busy0) / max(1, total1 - total0),
           "connection_bound": bound,
           "max_connections": activity["max_connections"],
           "max_worker_connections": activity["max_worker_connections"],
           "activity_samples": activity["samples"],
           "lock_wait_samples": activity["lock_wait_samples"],
           "max_lock_waiters": activity["max_lock_waiters"],
           "activity": activity}


def run(backend: str, sz, env) -> dict:
    if backend != "postgres":
        return {"skipped": "W9 runs on PostgreSQL only"}
    runs: dict[int, list[dict]] = {n: [] for n in sz.scale_workers}
    for r in range(env.runs):  # a round walks every step, so drift spreads over all of them
        for n in sz.scale_workers:
            env.log(f"W9 postgres {n} worker(s) x {sz.scale_concurrency} run {r + 1}/{env.runs}")
            try:
                runs[n].append(step(sz, n))
            except Exception as exc:  # noqa: BLE001 - one broken step must not sink the rest
                runs[n].append({"error": f"{type(exc).__name__}: {exc}"})
            env.log(f"   -> {_fmt(runs[n][-1])}")
    return {"pool": pool_per_worker(), "marker_priority": MARKER_PRIORITY,
            "bulk_priority": BULK_PRIORITY,
            "steps": {f"n{n}": summarize(rs) for n, rs in runs.items()}}


def _ms(v: float | None) -> float | None:
    return None if v is None else v * 1000


def _f(r: dict, key: str) -> str:
    v = r.get(key)
    return "-" if v is None else f"{v:.1f}"


def _fmt(r: dict) -> str:
    if "error" in r and "jobs_per_s" not in r:
        return r["error"]
    rate = r.get("jobs_per_s")
    return (f"{rate:.0f} jobs/s" if rate else "no rate") \
        + (" (capped)" if r.get("capped") else "") \
        + f", {r.get('done')}/{r.get('jobs')} done, pickup p50 {_f(r, 'pickup_p50_ms')} p99 " \
        + f"{_f(r, 'pickup_p99_ms')} ms (to claim p50 {_f(r, 'to_claim_p50_ms')} p99 " \
        + f"{_f(r, 'to_claim_p99_ms')}; {r['markers']} markers), " \
        + f"conns {r['max_connections']} (workers {r['max_worker_connections']}, bound " \
        + f"{r['connection_bound']}), lock-wait samples {r['lock_wait_samples']}/" \
        + f"{r['activity_samples']}, CPU {r['cpu_busy_pct']:.0f} %"
