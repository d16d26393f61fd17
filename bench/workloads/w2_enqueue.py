"""W2 enqueue rate: separate ``submit`` calls (one transaction each), and ``submit_many``
batches. Measured in the harness process against a fresh database, no worker running."""

from __future__ import annotations

import time

from ..apps import make_app

from ..backends import TetherDB
from ..peers import peers_for
from ..stats import summarize

KEY = "W2"
TITLE = "enqueue rate (jobs/s)"


def tether_once(backend: str, sz) -> dict:
    db = TetherDB(backend, "w2")
    app = make_app(db.url)
    try:
        app.submit("noop")  # migrations, price profile pinning: not part of the rate
        t = time.perf_counter()
        for _ in range(sz.enqueue_single):
            app.submit("noop")
        single = sz.enqueue_single / (time.perf_counter() - t)
        t = time.perf_counter()
        n = sz.enqueue_batch_jobs
        b = sz.enqueue_batch_size
        for i in range(0, n, b):
            app.submit_many([{"type": "noop"} for _ in range(min(b, n - i))])
        batch = n / (time.perf_counter() - t)
        return {"single_per_s": single, "batch_jobs_per_s": batch}
    finally:
        app.close()
        db.drop()


def run(backend: str, sz, env) -> dict:
    runs = []
    for r in range(env.runs):
        env.log(f"W2 {backend} tether run {r + 1}/{env.runs}")
        runs.append(tether_once(backend, sz))
        env.log(f"   -> single {runs[-1]['single_per_s']:.0f}/s, "
                f"batch {runs[-1]['batch_jobs_per_s']:.0f} jobs/s")
    out = {"tether": summarize(runs), "peers": {}}
    for peer in peers_for(backend, env.peers):
        ok, why = peer.available()
        if not ok:
            out["peers"][peer.name] = peer.skipped(why)
            continue
        runs = []
        for r in range(env.runs):
            env.log(f"W2 {backend} {peer.name} run {r + 1}/{env.runs}")
            try:
                runs.append(peer.enqueue_rates(sz))
            except Exception as exc:  # noqa: BLE001
                runs.append({"error": f"{type(exc).__name__}: {exc}"})
        out["peers"][peer.name] = summarize(runs)
    return out
