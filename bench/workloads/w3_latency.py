"""W3 pickup latency at low load: one job at a time into an idle worker process, each
submitted a random 20-600 ms after the previous one started (wider than the poll interval,
so arrivals fall at random points of a polling worker's cycle); latency = the start time the job writes (inside its function) minus the time just
before ``submit``. SQLite workers poll (interval ``poll_interval``); PostgreSQL workers wake
on LISTEN/NOTIFY. Peers run the same with their defaults. On PostgreSQL the same run also
measures the pickup floor (``bench/pickup_floor.py``): the same hops with no engine."""

from __future__ import annotations

from .. import pickup_floor
from ..apps import make_app
from ..backends import SCRATCH, TetherDB, stop, tether_worker, wait_for
from ..measure import StampFile, pickup_latencies
from ..peers import peers_for
from ..stats import summarize

KEY = "W3"
TITLE = "pickup latency at low load (ms)"


def tether_once(backend: str, sz) -> dict:
    db = TetherDB(backend, "w3")
    app = make_app(db.url)
    app.store  # migrate before the worker starts
    stamps = StampFile(SCRATCH / f"w3-{db.label}.stamps")
    proc = tether_worker(db.url, concurrency=sz.concurrency, poll_interval=sz.poll_interval,
                         name=f"w3-{backend}")
    try:
        wait_for(lambda: db.scalar("SELECT count(*) FROM workers"), timeout=30)

        def submit(marker: str) -> None:
            app.submit("stamp", {"path": str(stamps.path), "marker": marker})

        res = pickup_latencies(submit, stamps, sz.latency_samples, gap=sz.latency_gap_s)
        res["poll_interval_s"] = sz.poll_interval
        return res
    finally:
        stop([proc])
        app.close()
        db.drop()
        stamps.path.unlink(missing_ok=True)


def run(backend: str, sz, env) -> dict:
    runs = []
    for r in range(env.runs):
        env.log(f"W3 {backend} tether run {r + 1}/{env.runs}")
        runs.append(tether_once(backend, sz))
        env.log(f"   -> p50 {runs[-1]['p50_ms']} ms, p99 {runs[-1]['p99_ms']} ms")
    out = {"tether": summarize(runs), "peers": {}}
    if backend == "postgres":
        floor = []
        for r in range(env.runs):
            env.log(f"W3 postgres pickup floor run {r + 1}/{env.runs}")
            floor.append(pickup_floor.measure(sz.latency_samples, sz.latency_gap_s))
            env.log(f"   -> p50 {floor[-1]['p50_ms']} ms, p99 {floor[-1]['p99_ms']} ms")
        out["floor"] = summarize(floor)
    for peer in peers_for(backend, env.peers):
        ok, why = peer.available()
        if not ok:
            out["peers"][peer.name] = peer.skipped(why)
            continue
        runs = []
        for r in range(env.runs):
            env.log(f"W3 {backend} {peer.name} run {r + 1}/{env.runs}")
            try:
                runs.append(peer.latency(sz))
                env.log(f"   -> p50 {runs[-1]['p50_ms']} ms, p99 {runs[-1]['p99_ms']} ms")
            except Exception as exc:  # noqa: BLE001
                runs.append({"error": f"{type(exc).__name__}: {exc}"})
                env.log(f"   -> {runs[-1]['error']}")
        out["peers"][peer.name] = summarize(runs)
    return out
