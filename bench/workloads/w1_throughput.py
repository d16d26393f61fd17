"""W1 end-to-end throughput: N no-op jobs bulk-enqueued (submit_many, 1,000 a transaction),
then drained by 1 and by 2 worker processes. jobs/s counts from the first completion seen to
the last (process start-up excluded). Peers run the same N with the same processes and
concurrency: huey on SQLite, procrastinate and pgqueuer on PostgreSQL. On PostgreSQL the same
run also goes through a PgBouncer in transaction pooling mode that the harness starts
(``pgbouncer``: enqueue, claims and finishes pooled, LISTEN on the direct URL)."""

from __future__ import annotations

import time

from tether import Tether

from .. import probe
from ..apps import make_app

from ..backends import TetherDB, pgbouncer_problem, start_pgbouncer, stop, tether_worker
from ..measure import drain
from ..peers import peers_for
from ..stats import summarize

KEY = "W1"
TITLE = "end-to-end throughput (jobs/s)"
PROCESSES = (1, 2)


def enqueue(app: Tether, n: int, batch: int = 1_000, type: str = "noop") -> float:
    t = time.perf_counter()
    for i in range(0, n, batch):
        app.submit_many([{"type": type} for _ in range(min(batch, n - i))])
    return time.perf_counter() - t


def tether_once(backend: str, sz, processes: int) -> dict:
    db = TetherDB(backend, f"w1p{processes}")
    app = make_app(db.url)
    procs = []
    try:
        enqueue_s = enqueue(app, sz.throughput_jobs)
        procs = [tether_worker(db.url, concurrency=sz.concurrency,
                               poll_interval=sz.poll_interval, name=f"w1-{backend}-{i}")
                 for i in range(processes)]
        res = drain(db.count, sz.throughput_jobs, timeout=sz.drain_timeout_s,
                        procs=procs)
        res["enqueue_jobs_per_s"] = sz.throughput_jobs / enqueue_s
        return res
    finally:
        stop(procs)
        app.close()
        db.drop()


def run(backend: str, sz, env) -> dict:
    out: dict = {"tether": {}, "peers": {}}
    for k in PROCESSES:
        runs = []
        for r in range(env.runs):
            env.log(f"W1 {backend} tether {k} process(es) run {r + 1}/{env.runs}")
            runs.append(tether_once(backend, sz, k))
            env.log(f"   -> {_fmt(runs[-1])}")
        out["tether"][f"p{k}"] = summarize(runs)
    if backend == "postgres":
        out["probe"] = {}
        for k in PROCESSES:
            runs = []
            for r in range(env.runs):
                env.log(f"W1 postgres probe {k} process(es) run {r + 1}/{env.runs}")
                runs.append(probe.measure(sz.throughput_jobs, k, sz.probe_batch))
                env.log(f"   -> {runs[-1]['jobs_per_s']:.0f} jobs/s")
            out["probe"][f"p{k}"] = summarize(runs)
        out["pgbouncer"] = run_pgbouncer(sz, env)
    for peer in peers_for(backend, env.peers):
        ok, why = peer.available()
        if not ok:
            out["peers"][peer.name] = peer.skipped(why)
            continue
        out["peers"][peer.name] = {}
        for k in PROCESSES:
            runs = []
            for r in range(env.runs):
                env.log(f"W1 {backend} {peer.name} {k} process(es) run {r + 1}/{env.runs}")
                try:
                    runs.append(peer.throughput(sz, k))
                except Exception as exc:  # noqa: BLE001 - a broken peer is reported, not fatal
                    runs.append({"error": f"{type(exc).__name__}: {exc}"})
                env.log(f"   -> {_fmt(runs[-1])}")
            out["peers"][peer.name][f"p{k}"] = summarize(runs)
    return out


def tether_pgbouncer_once(bouncer, sz, processes: int) -> dict:
    """``tether_once`` on PostgreSQL with every URL through ``bouncer`` but LISTEN's."""
    db = TetherDB("postgres", f"w1b{processes}")
    alias = f"w1_{db.schema}"
    url = bouncer.database(db.schema, alias)
    app = make_app(url)
    procs = []
    try:
        enqueue_s = enqueue(app, sz.throughput_jobs)
        procs = [tether_worker(url, concurrency=sz.concurrency, poll_interval=sz.poll_interval,
                               name=f"w1-pgbouncer-{i}", extra_env={"TETHER_LISTEN_URL": db.url})
                 for i in range(processes)]
        res = drain(db.count, sz.throughput_jobs, timeout=sz.drain_timeout_s, procs=procs)
        res["enqueue_jobs_per_s"] = sz.throughput_jobs / enqueue_s
        res["pgbouncer_transactions"] = int(bouncer.stats(alias)["total_xact_count"])
        return res
    finally:
        stop(procs)
        app.close()
        db.drop()


def run_pgbouncer(sz, env) -> dict:
    """W1 through a PgBouncer (transaction pooling) started for it, 1 and 2 processes."""
    problem = pgbouncer_problem()
    if problem:
        return {"skipped": problem}
    out: dict = {}
    with start_pgbouncer() as bouncer:
        out["pgbouncer_version"] = bouncer.admin("SHOW VERSION")[0]["version"]
        for k in PROCESSES:
            runs = []
            for r in range(env.runs):
                env.log(f"W1 postgres via pgbouncer {k} process(es) run {r + 1}/{env.runs}")
                runs.append(tether_pgbouncer_once(bouncer, sz, k))
                env.log(f"   -> {_fmt(runs[-1])}")
            out[f"p{k}"] = summarize(runs)
    return out


def _fmt(r: dict) -> str:
    if "error" in r:
        return r["error"]
    rate = r.get("jobs_per_s")
    return (f"{rate:.0f} jobs/s" if rate else "no rate") + (" (capped)" if r.get("capped") else "") \
        + f", {r.get('done')}/{r.get('jobs')} done"
