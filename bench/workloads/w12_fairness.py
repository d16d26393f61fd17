"""W12 fair dispatch: tenant A has ``fair_backlog`` ``noop`` jobs queued; the workers start,
and once they are draining A, tenant B submits ``fair_newcomer`` jobs. Three runs on the same
worker processes' settings: B alone (no backlog: the yardstick), A's backlog with fair dispatch
(the default claim, ``claim_jobs_fair``) and without it (``TETHER_FAIR_DISPATCH=0``, strict
priority order). Reported: B's queue wait p50/p99 (each job's claim time less the time it
became runnable, from ``job_attempts``; a worker claims a batch ahead, so B's jobs often share
one claim time) and time to done (its finish less that time), and the drain rate of every job (A's and B's: their
count over the span from the first claim to the last finish, read in the database), fair
against strict. docs/flow-control.md states the rule; bench/README.md has a table."""

from __future__ import annotations

import time

from ..apps import make_app
from ..backends import TetherDB, stop, tether_worker, wait_for
from ..stats import percentile, ratio

KEY = "W12"
TITLE = "fairness: B's queue wait behind A's backlog, and drain rate fair vs strict"


def _spans(db: TetherDB) -> tuple[list[float], list[float], float, int]:
    """B's queue waits and times to done (s), the drain span (s) and the jobs finished."""
    epoch = ("{}" if db.backend == "sqlite" else "extract(epoch FROM {})").format
    with db.connect() as conn:
        rows = conn.execute(
            f"SELECT {epoch('a.claimed_at - j.run_after')}, "
            f"{epoch('a.finished_at - j.run_after')} FROM job_attempts a "
            "JOIN jobs j ON j.id = a.job_id WHERE j.project = 'tenant-b' AND a.attempt = 1"
        ).fetchall()
        waits, dones = [float(r[0]) for r in rows], [float(r[1]) for r in rows]
        span, n = conn.execute(
            f"SELECT {epoch('max(finished_at) - min(claimed_at)')}, count(*) FROM job_attempts"
        ).fetchone()
    return waits, dones, float(span), int(n)


def once(backend: str, sz, *, backlog: int, fair: bool) -> dict:
    db = TetherDB(backend, f"w12_{'fair' if fair else 'strict'}_{backlog}")
    app = make_app(db.url)
    procs = []
    try:
        for i in range(0, backlog, 5_000):
            app.submit_many([{"type": "noop", "project": "tenant-a"}
                             for _ in range(min(5_000, backlog - i))])
        env = {"TETHER_FAIR_DISPATCH": "1" if fair else "0"}
        procs = [tether_worker(db.url, concurrency=sz.concurrency,
                               poll_interval=sz.poll_interval, extra_env=env,
                               name=f"w12-{backend}-{i}") for i in range(sz.fair_workers)]
        if backlog:  # A is draining before B arrives
            wait_for(lambda: db.count() >= min(backlog, 50), timeout=120, interval=0.01)
        else:
            app.submit("noop", project="warm-up")
            wait_for(lambda: db.count() >= 1, timeout=120, interval=0.01)
        app.submit_many([{"type": "noop", "project": "tenant-b"}
                         for _ in range(sz.fair_newcomer)])
        total = backlog + sz.fair_newcomer + (0 if backlog else 1)
        t = time.perf_counter()
        done = wait_for(lambda: db.count() >= total, timeout=sz.fair_timeout_s, interval=0.02)
        drained_s = time.perf_counter() - t
        waits, dones, span, finished = _spans(db)
        return {"backlog": backlog, "fair": fair, "b_jobs": len(waits),
                "b_wait_p50_s": percentile(waits, 50), "b_wait_p99_s": percentile(waits, 99),
                "b_done_p50_s": percentile(dones, 50), "b_done_p99_s": percentile(dones, 99),
                "drain_jobs_per_s": finished / span if span > 0 else None,
                "after_b_s": drained_s, "capped": not done}
    finally:
        stop(procs)
        app.close()
        db.drop()


def run(backend: str, sz, env) -> dict:
    runs: dict[str, list[dict]] = {"alone": [], "fair": [], "strict": []}
    for r in range(env.runs):
        for name, backlog, fair in (("alone", 0, True), ("fair", sz.fair_backlog, True),
                                    ("strict", sz.fair_backlog, False)):
            env.log(f"W12 {backend} {name} run {r + 1}/{env.runs}")
            res = once(backend, sz, backlog=backlog, fair=fair)
            runs[name].append(res)
            env.log(f"   -> B wait p50 {res['b_wait_p50_s']:.3f} s, p99 "
                    f"{res['b_wait_p99_s']:.3f} s, done p99 {res['b_done_p99_s']:.3f} s, "
                    f"drain {res['drain_jobs_per_s'] or 0:.0f} "
                    f"jobs/s{' (capped)' if res['capped'] else ''}")
    out: dict = {}
    for name, rs in runs.items():
        out[name] = {k: sorted(r[k] for r in rs if r[k] is not None)[len(rs) // 2]
                     for k in ("b_wait_p50_s", "b_wait_p99_s", "b_done_p50_s", "b_done_p99_s",
                               "drain_jobs_per_s")
                     if any(r[k] is not None for r in rs)}
        out[name]["runs"] = rs
    out["drain_fair_vs_strict"] = ratio(out["fair"].get("drain_jobs_per_s"),
                                        out["strict"].get("drain_jobs_per_s"))
    return {"tether": out}
