"""W7 worker memory: one worker process drains no-op jobs; its RSS (/proc/PID/status VmRSS)
is read once it has finished ``rss_low`` jobs and again after ``rss_high``. Jobs are fed in
batches so the queue never runs dry. growth = (RSS_high - RSS_low) / RSS_low. A run cut by
``rss_timeout_s`` reports the RSS at the count it reached (flagged)."""

from __future__ import annotations

import time

from ..apps import make_app

from ..backends import TetherDB, rss_kb, stop, tether_worker, wait_for

KEY = "W7"
TITLE = "worker RSS growth"
FEED = 5_000


def tether_once(backend: str, sz, env) -> dict:
    db = TetherDB(backend, "w7")
    app = make_app(db.url)
    proc = None
    try:
        app.submit_many([{"type": "noop"} for _ in range(sz.rss_low)])
        proc = tether_worker(db.url, concurrency=sz.concurrency, poll_interval=sz.poll_interval,
                             name=f"w7-{backend}")
        wait_for(lambda: db.count() >= sz.rss_low, timeout=sz.rss_timeout_s, interval=0.1)
        time.sleep(0.5)
        low = rss_kb(proc.pid)
        low_jobs = db.count()
        submitted = sz.rss_low
        deadline = time.monotonic() + sz.rss_timeout_s
        last_log = time.monotonic()
        while time.monotonic() < deadline:
            done = db.count()
            if done >= sz.rss_high:
                break
            if submitted - done < FEED and submitted < sz.rss_high:
                n = min(FEED, sz.rss_high - submitted)
                for i in range(0, n, 1_000):
                    app.submit_many([{"type": "noop"} for _ in range(min(1_000, n - i))])
                submitted += n
            if time.monotonic() - last_log > 30:
                env.log(f"   W7 {backend}: {done} jobs done, RSS {rss_kb(proc.pid)} kB")
                last_log = time.monotonic()
            time.sleep(0.2)
        high_jobs = db.count()
        time.sleep(0.5)
        high = rss_kb(proc.pid)
        growth = (high - low) / low if low and high else None
        return {"rss_low_kb": low, "rss_high_kb": high, "jobs_low": low_jobs,
                "jobs_high": high_jobs, "growth_pct": None if growth is None else growth * 100,
                "capped": high_jobs < sz.rss_high}
    finally:
        if proc is not None:
            stop([proc])
        app.close()
        db.drop()


def run(backend: str, sz, env) -> dict:
    env.log(f"W7 {backend} tether: RSS after {sz.rss_low} and {sz.rss_high} jobs")
    res = tether_once(backend, sz, env)
    env.log(f"   -> {res}")
    return {"tether": res}
