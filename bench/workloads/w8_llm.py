"""W8 a realistic LLM workload: ``llm_jobs`` jobs, each ``llm_calls`` journaled simulated
calls one after another (``tether.providers.simulated``, fixed latency ``llm_latency_s``),
drained by ``llm_workers`` worker processes of concurrency ``llm_concurrency`` (one call in
flight per running job). Reported:

- time to drain, from the first ``submit_many`` to the last job succeeded, against the
  latency-bound ideal: calls x latency / calls in flight (target: within 10 %);
- engine CPU per call: the worker processes' user + system CPU (``/proc``) from when they
  are idle and registered to the end of the drain, divided by the calls; on PostgreSQL also
  the server's (every postgres process, ``server_cpu_seconds``) over the same span;
- the database's commits per call (``bench/commits.py``: PostgreSQL ``xact_commit`` delta
  of a database of the run's own, less the harness's own progress queries; SQLite WAL
  commit frames);
- where a call's time beyond its latency went, read back from the journal and attempt rows
  (``bench/timeline.py``)."""

from __future__ import annotations

import time

from ..apps import make_app
from ..backends import (SCRATCH, TetherDB, cpu_seconds, server_cpu_seconds, stop, tether_worker,
                        wait_for)
from ..commits import PgCommits, WalCommits
from ..measure import drain
from ..stats import summarize
from ..timeline import call_timeline

KEY = "W8"
TITLE = "LLM workload: drain time vs the latency-bound ideal"


def tether_once(backend: str, sz) -> dict:
    db = TetherDB(backend, "w8", own_database=True)
    app = make_app(db.url)
    app.store  # migrate before the workers start
    bill = SCRATCH / f"w8-{db.label}.bill"
    procs = [tether_worker(db.url, concurrency=sz.llm_concurrency,
                           poll_interval=sz.poll_interval, name=f"w8-{backend}-{i}")
             for i in range(sz.llm_workers)]
    counter = WalCommits(db.path) if backend == "sqlite" else PgCommits(db.dbname)
    polls = 0

    def done() -> int:
        nonlocal polls
        polls += 1
        counter.poll()
        return db.count()

    try:
        wait_for(lambda: int(db.scalar("SELECT count(*) FROM workers")) >= sz.llm_workers,
                 timeout=60, interval=0.05)
        counter.start()
        cpu0 = sum(cpu_seconds(p.pid) or 0.0 for p in procs)
        server0 = server_cpu_seconds() if backend == "postgres" else None
        payload = {"calls": sz.llm_calls, "latency_s": sz.llm_latency_s, "bill": str(bill)}
        t0 = time.perf_counter()
        for i in range(0, sz.llm_jobs, 1_000):
            app.submit_many([{"type": "llm", "payload": payload}
                             for _ in range(min(1_000, sz.llm_jobs - i))])
        res = drain(done, sz.llm_jobs, timeout=sz.llm_timeout_s, poll=0.05, procs=procs)
        drain_s = time.perf_counter() - t0
        cpu_s = sum(cpu_seconds(p.pid) or 0.0 for p in procs) - cpu0
        server1 = server_cpu_seconds() if server0 is not None else None
        stop(procs)
        app.close()
        db.close()
        commits = counter.stop() - (polls if backend == "postgres" else 0)
        timeline = call_timeline(db, sz.llm_latency_s)
        calls = sz.llm_jobs * sz.llm_calls
        in_flight = sz.llm_workers * sz.llm_concurrency
        ideal = calls * sz.llm_latency_s / in_flight
        out = {"drain_s": drain_s, "ideal_s": ideal, "over_ideal_pct": (drain_s / ideal - 1) * 100,
               "calls": calls, "calls_in_flight": in_flight, "jobs_done": res["done"],
               "cpu_s": cpu_s, "cpu_us_per_call": cpu_s / calls * 1e6,
               "commits": commits, "commits_per_call": commits / calls,
               "capped": res["capped"], **timeline}
        if server0 is not None and server1 is not None:
            out["server_cpu_us_per_call"] = (server1 - server0) / calls * 1e6
        if backend == "sqlite":
            out["wal_restarts"] = counter.restarts
        if "error" in res:
            out["error"] = res["error"]
        return out
    finally:
        stop(procs)
        app.close()
        db.drop()
        bill.unlink(missing_ok=True)


def run(backend: str, sz, env) -> dict:
    runs = []
    for r in range(env.runs):
        env.log(f"W8 {backend} tether run {r + 1}/{env.runs}")
        runs.append(tether_once(backend, sz))
        got = runs[-1]
        server = (f", server {got['server_cpu_us_per_call']:.0f} us/call"
                  if "server_cpu_us_per_call" in got else "")
        env.log(f"   -> {got['drain_s']:.2f} s vs ideal {got['ideal_s']:.2f} s "
                f"({got['over_ideal_pct']:+.1f} %), {got['cpu_us_per_call']:.0f} us CPU/call, "
                f"{got['commits_per_call']:.2f} commits/call{server}; a call +"
                f"{got.get('call_over_latency_ms', 0):.1f} ms in it, +"
                f"{got.get('between_calls_ms', 0):.1f} ms to the next")
    return {"tether": summarize(runs)}
