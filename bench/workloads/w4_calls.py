"""W4 journaled call throughput: one job makes N zero-latency simulated ``ctx.call``s through
``ctx.map(..., concurrency=8)`` in a worker process. calls/s = N / (the job's own finish -
start). Each call is a reservation, the simulated provider (which appends its own bill line,
like a real provider's record; not fsynced by default, as a completed write already survives
SIGKILL) and a settlement; the reservations and settlements of calls running at once share
transactions (``Store.account``). The bare provider rate (8 threads, no tether) is measured
alongside as the reference. The same calls made from an ``async def`` job (``ctx.acall``, a
semaphore of ``concurrency``) are measured too, interleaved run by run.

A third, diagnostic variant (``tether_nodurable``, never a target) runs the ``ctx.map`` job
with the worker's commits not flushed to disk (SQLite ``synchronous=OFF``, PostgreSQL
``synchronous_commit=off``): how fast the same calls go when no commit waits for the disk,
which tells whether W4 is bound by durable commits or by the work of a call itself. On SQLite
the bound set by the durable commits alone is measured too (``commit_bound``, see
``bench/commit_cost.py``): the pages a batch of reservations and one of settlements write,
and what commits of that many pages cost on this disk; and the floor (``floor``, see
``bench/call_floor.py``): the same calls made by a bare implementation that keeps only the
two durable writes a call must make, in tether's tables, with its SQL. ``in_flight`` sets
the ``ctx.map`` job against that floor at 8, 64 and 256 calls in flight, calls/s and CPU per
call (the restated target)."""

from __future__ import annotations

import threading
import time

from .. import call_floor, commit_cost
from ..apps import make_app
from ..backends import SCRATCH, TetherDB, cpu_seconds, stop, tether_worker, wait_for
from ..stats import summarize

KEY = "W4"
TITLE = "journaled calls (calls/s)"


def provider_rate(n: int, threads: int) -> float:
    """The simulated provider alone: how fast it answers and bills with no tether around it."""
    from tether.providers.simulated import SimulatedProvider
    bill = SCRATCH / "w4-bare.bill"
    bill.unlink(missing_ok=True)
    provider = SimulatedProvider(bill, latency_s=0)
    keys = iter(range(n))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(keys, None)
            if i is None:
                return
            provider.complete(f"item {i}", key=f"c{i}", max_tokens=64)

    t = time.perf_counter()
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    rate = n / (time.perf_counter() - t)
    bill.unlink(missing_ok=True)
    return rate


NOT_DURABLE = {"TETHER_SQLITE_SYNCHRONOUS": "OFF", "PGOPTIONS": "-c synchronous_commit=off"}


def tether_once(backend: str, sz, job_type: str = "calls", durable: bool = True,
                concurrency: int | None = None) -> dict:
    """One job of ``sz.calls`` calls, ``concurrency`` (default ``sz.call_concurrency``) at a
    time. ``cpu_us_per_call``: the worker process's CPU from idle and registered to the job's
    end, per call."""
    db = TetherDB(backend, "w4")
    app = make_app(db.url)
    app.store  # migrate before the worker starts
    bill = SCRATCH / f"w4-{db.label}.bill"
    proc = None
    try:
        proc = tether_worker(db.url, concurrency=1, poll_interval=sz.poll_interval,
                             name=f"w4-{backend}", extra_env=None if durable else NOT_DURABLE)
        wait_for(lambda: db.scalar("SELECT count(*) FROM workers"), timeout=60)
        cpu0 = cpu_seconds(proc.pid)
        job = app.submit(job_type, {"n": sz.calls, "bill": str(bill),
                                   "concurrency": concurrency or sz.call_concurrency})
        done = wait_for(lambda: app.get(job.id).state.value in ("succeeded", "failed",
                                                               "paused", "cancelled"),
                        timeout=sz.calls_timeout_s, interval=0.1)
        cpu = cpu_seconds(proc.pid)
        cpu_us = (cpu - cpu0) / sz.calls * 1e6 if cpu is not None and cpu0 is not None else None
        final = app.get(job.id)
        if not done:  # cut by calls_timeout_s: the rate over the calls journaled so far
            journaled = int(db.scalar(
                "SELECT count(*) FROM call_journal WHERE job_id = ? AND status = 'done'",
                (job.id,)))
            started = app.attempts(job.id)[0].started_at
            elapsed = time.time() - started.timestamp() if started else None
            return {"calls_per_s": journaled / elapsed if elapsed else None,
                    "calls": journaled, "capped": True, "job_s": elapsed}
        if final.state.value != "succeeded":
            return {"error": f"job ended {final.state.value} ({final.error_code}: "
                             f"{final.error_summary})"}
        r = final.result
        return {"calls_per_s": sz.calls / (r["finished"] - r["started"]),
                "job_s": r["finished"] - r["started"], "calls": r["calls"],
                "cpu_us_per_call": cpu_us}
    finally:
        if proc is not None:
            stop([proc])
        app.close()
        db.drop()
        bill.unlink(missing_ok=True)


def run(backend: str, sz, env) -> dict:
    """``tether``: the ``ctx.map`` job (threads; what the target is judged on); ``tether_async``:
    the same calls from an ``async def`` job (``ctx.acall``), runs interleaved with it."""
    variants = {"tether": ("calls", True), "tether_async": ("acalls", True),
                "tether_nodurable": ("calls", False)}
    runs: dict[str, list] = {name: [] for name in variants}
    for r in range(env.runs):
        for name, (job_type, durable) in variants.items():
            env.log(f"W4 {backend} {name} run {r + 1}/{env.runs}")
            runs[name].append(tether_once(backend, sz, job_type, durable))
            env.log(f"   -> {runs[name][-1]}")
    bare = provider_rate(min(sz.calls, 2_000), sz.call_concurrency)
    out = dict({name: summarize(got) for name, got in runs.items()},
               provider_alone_calls_per_s=bare)
    if backend == "sqlite":
        quick = sz.calls < 1_000
        out["commit_bound"] = commit_cost.measure(sz.call_concurrency, batches=5 if quick else 50,
                                                  commits=20 if quick else 300)
        env.log("W4 sqlite floor (bench/call_floor.py)")
        floor = call_floor.measure(sz.call_concurrency, sz.calls, runs=env.runs)
        out["floor"] = {name: summarize(got) for name, got in floor.items()}
    out["in_flight"] = in_flight(backend, sz, env)
    return out


FLOOR_PAIRS = (
    ("tether", "floor", "", "tether / floor", "floor: call_floor.py durable variant"),
    ("tether_async", "floor", "async_", "async def job / floor", "both coroutines (like for like)"),
    ("tether", "floor_threads", "threads_", "tether / threads floor",
     "both on threads (floor: its threads variant)"),
)
"""Each in-flight row's job set against a floor: (job, floor, key prefix, label, note). The
last two are the ones judged (like for like, bench/targets.py)."""


def in_flight(backend: str, sz, env) -> dict:
    """The ``ctx.map`` job and the ``async def`` job at each of ``sz.call_in_flight`` calls
    in flight against the floor (SQLite: the floor exists there only) at the same, runs
    interleaved: calls/s as % of the floor's, and CPU per journaled call.

    Each job is set against the floor of its own mechanism, which is what the target judges
    (bench/targets.py): the ``ctx.map`` job (threads) against the floor's ``threads`` variant
    (``floor_threads``, keys ``threads_*``), the ``async def`` job (``tether_async``) against
    its coroutine ``durable`` variant (``async_*``). The ``ctx.map`` job against the coroutine
    floor (unprefixed keys) says how much of the distance the threads add."""
    out: dict = {}
    for c in sz.call_in_flight:
        got: dict[str, list] = {"tether": [], "tether_async": [], "floor": [],
                                "floor_threads": []}
        for r in range(env.runs):
            env.log(f"W4 {backend} {c} calls in flight run {r + 1}/{env.runs}")
            got["tether"].append(tether_once(backend, sz, concurrency=c))
            got["tether_async"].append(tether_once(backend, sz, "acalls", concurrency=c))
            if backend == "sqlite":
                floors = call_floor.measure(c, sz.calls, only=("durable", "threads"))
                got["floor"] += floors["durable"]
                got["floor_threads"] += floors["threads"]
            env.log(f"   -> tether {got['tether'][-1]}; async {got['tether_async'][-1]}; "
                    f"floor {got['floor'][-1] if got['floor'] else '-'}")
        row = {name: summarize(runs) for name, runs in got.items() if runs}
        for job, floor, prefix, _, _ in FLOOR_PAIRS:
            if floor in row:
                pct, x = _against(row[job], row[floor])
                row[f"{prefix}pct_of_floor"], row[f"{prefix}cpu_x_floor"] = pct, x
        out[str(c)] = row
    return out


def _against(job: dict, floor: dict) -> tuple[float | None, float | None]:
    """A job's calls/s as % of a floor's, and its CPU a call as a multiple of the floor's."""
    t, f = job.get("calls_per_s"), floor.get("calls_per_s")
    tc, fc = job.get("cpu_us_per_call"), floor.get("cpu_us_per_call")
    return (t / f * 100 if t and f else None), (tc / fc if tc and fc else None)
