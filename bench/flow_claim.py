"""Claim latency with flow control: one ``store.claim`` of ``limit`` jobs (started, then
finished outside the timing, so the slots held stay few) from a queue of ``queued`` jobs over
``projects`` projects, timed ``samples`` times; the median and p99 per mode. Modes: ``strict``
(``claim_jobs``), ``fair`` (``claim_jobs_fair``, the default), and each with a concurrency
limit present (``+limit``: per project, high enough never to bind, so the claim pays for the
counting and, on PostgreSQL, ``flow_lock``). A tree without flow control (an older commit, run
with PYTHONPATH at its snapshot) measures ``strict`` only: its claim takes no ``fair``.

    python -m bench.flow_claim [--backend sqlite|postgres] [--queued N] [--projects K]
"""

from __future__ import annotations

import argparse
import inspect
import json
import time

from tether import JobState, Tether
from tether.store.base import Outcome

from .backends import TetherDB
from .stats import median, percentile


def measure(app: Tether, *, limit: int, samples: int, **kwargs) -> dict:
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        claims = app.store.claim("bench", queues=None, limit=limit, lease_ttl=60, start=True,
                                 **kwargs)
        times.append((time.perf_counter() - t) * 1000)
        app.store.finish_many([(c.job.id, c.attempt, Outcome(JobState.SUCCEEDED,
                                                           result_json="null"))
                               for c in claims])
    return {"median_ms": median(times), "p99_ms": percentile(times, 99)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite")
    ap.add_argument("--queued", type=int, default=20_000)
    ap.add_argument("--projects", type=int, default=2)
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--samples", type=int, default=200)
    args = ap.parse_args()
    db = TetherDB(args.backend, "flowclaim")
    app = Tether(db.url)
    app.register("noop", lambda ctx, payload: None)
    try:
        for i in range(0, args.queued, 5_000):
            app.submit_many([{"type": "noop", "project": f"p{(i + k) % args.projects}"}
                             for k in range(min(5_000, args.queued - i))])
        has_fair = "fair" in inspect.signature(app.store.claim).parameters
        out = {}
        modes = [("strict", {"fair": False} if has_fair else {})]
        if has_fair:
            modes.append(("fair", {}))
        for name, kwargs in modes:
            out[name] = measure(app, limit=args.limit, samples=args.samples, **kwargs)
        if has_fair:
            app.set_flow_limit("type", "noop", per_key=1_000_000)
            for name, kwargs in modes:
                out[name + "+limit"] = measure(app, limit=args.limit, samples=args.samples,
                                               **kwargs)
        print(json.dumps({"backend": args.backend, "queued": args.queued,
                          "projects": args.projects, "limit": args.limit, **out}, indent=1))
    finally:
        app.close()
        db.drop()


if __name__ == "__main__":
    main()
