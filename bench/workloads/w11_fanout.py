"""W11 fan-out at corpus scale: a parent job that maps ``noop`` over N items
(``ctx.map_jobs``) and gathers them, against ``submit_many`` of N plain ``noop`` jobs drained
by the same worker process(es), in the same run. Each side is timed from its submission (the
workers are already running and idle) to its last job's end; the ratio is fan-out / plain.
The parent's process peak RSS (VmHWM; the largest of the worker processes, one of which ran
the parent) is reported beside it. Sizes: ``fanout_children`` (a tuple: each size is one row), ``fanout_workers``."""

from __future__ import annotations

import time

from ..apps import make_app
from ..backends import TetherDB, rss_kb, stop, tether_worker, wait_for
from ..stats import ratio, summarize

KEY = "W11"
TITLE = "fan-out: a parent's N children against N plain jobs (time ratio)"


def _timed(db: TetherDB, submit, done, n: int, timeout: float) -> tuple[float, bool]:
    t = time.perf_counter()
    submit()
    ok = wait_for(done, timeout=timeout, interval=0.01)
    return time.perf_counter() - t, bool(ok)


def once(backend: str, sz, n: int) -> dict:
    db = TetherDB(backend, f"w11_{n}")
    app = make_app(db.url)
    procs = []
    try:
        procs = [tether_worker(db.url, concurrency=sz.concurrency,
                               poll_interval=sz.poll_interval, name=f"w11-{backend}-{i}")
                 for i in range(sz.fanout_workers)]
        app.submit("noop")  # the workers are up and idle before anything is timed
        wait_for(lambda: db.count() >= 1, timeout=60, interval=0.05)
        base = db.count()

        def plain() -> None:
            for i in range(0, n, 1_000):
                app.submit_many([{"type": "noop"} for _ in range(min(1_000, n - i))])
        plain_s, plain_ok = _timed(db, plain, lambda: db.count() >= base + n, n,
                                   sz.fanout_timeout_s)
        parent: list[int] = []
        fan_s, fan_ok = _timed(
            db, lambda: parent.append(app.submit("fanout", {"n": n}).id),
            lambda: app.get(parent[0]).state in ("succeeded", "failed"), n,
            sz.fanout_timeout_s)
        job = app.get(parent[0])
        peaks = [rss_kb(p.pid, "VmHWM") for p in procs]
        return {"children": n, "plain_s": plain_s, "fanout_s": fan_s,
                "ratio": ratio(fan_s, plain_s), "parent_state": job.state,
                "parent_result": job.result,
                "parent_peak_rss_kb": max((v for v in peaks if v), default=None),
                "capped": not (plain_ok and fan_ok)}
    finally:
        stop(procs)
        app.close()
        db.drop()


def run(backend: str, sz, env) -> dict:
    out: dict = {}
    for n in sz.fanout_children:
        if backend != "sqlite" and n > sz.fanout_pg_max:
            continue
        runs = []
        for r in range(env.runs):
            env.log(f"W11 {backend} {n} children run {r + 1}/{env.runs}")
            runs.append(once(backend, sz, n))
            last = runs[-1]
            env.log(f"   -> fan-out {last['fanout_s']:.2f} s, plain {last['plain_s']:.2f} s, "
                    f"x{last['ratio']:.2f}, parent peak RSS {last['parent_peak_rss_kb']} kB, "
                    f"{last['parent_state']}")
        out[str(n)] = summarize(runs)
    return {"tether": out}
