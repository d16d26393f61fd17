"""W5 claim cost: median time of ``store.claim(limit=claim_batch)`` with a small queue, a big
queue, and a small queue beside a big table of finished jobs. Ratios big/small must stay near 1.

The big tables are synthetic but valid: tether itself writes one template job of each kind
(a queued job; a job run to ``succeeded`` by an in-process worker, with its events and attempt),
then bulk SQL copies every column of the template rows (jobs, job_events, job_attempts) under
new ids: rows the engine could have written, built in seconds instead of hours. PostgreSQL
claims are timed twice: right after the bulk load (stale planner statistics, as after a big
``submit_many`` before autovacuum gets to it: ``before_analyze_ms``) and after ANALYZE (the
steady state the ratios use); SQLite is left as tether leaves it. A claim that returns nothing is reported as an error: it would mean the
copies no longer match what the engine expects."""

from __future__ import annotations

import time

from tether import Tether

from ..apps import make_app

from ..backends import TetherDB
from ..stats import median, ratio

KEY = "W5"
TITLE = "claim cost (ms per claim)"
TABLES = ("jobs", "job_events", "job_attempts")
PRE_ANALYZE_SAMPLES = 5


def _columns(db: TetherDB, conn, table: str) -> list[str]:
    if db.backend == "sqlite":
        rows = conn.execute(f"PRAGMA table_info({table})").fetchall()
        return [r[1] for r in rows]
    rows = conn.execute("SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND table_name = %s "
                        "ORDER BY ordinal_position", (table,)).fetchall()
    return [r[0] for r in rows]


def _copy(db: TetherDB, conn, template_id: int, n: int) -> tuple[int, int]:
    """``n`` copies of job ``template_id`` with its events and attempts; returns the id range."""
    if n <= 0:
        return (0, -1)
    cols = [c for c in _columns(db, conn, "jobs") if c != "id"]
    collist = ", ".join(cols)
    lo = int(conn.execute("SELECT coalesce(max(id), 0) FROM jobs").fetchone()[0]) + 1
    if db.backend == "sqlite":
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s "
                     f"WHERE x < {int(n)}) INSERT INTO jobs ({collist}) "
                     f"SELECT {collist} FROM jobs, s WHERE id = {int(template_id)} ORDER BY x")
    else:
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO jobs ({collist}) SELECT {collist} FROM jobs, "
                     f"generate_series(1, {int(n)}) AS s(x) WHERE id = {int(template_id)} "
                     f"ORDER BY x")
    hi = int(conn.execute("SELECT max(id) FROM jobs").fetchone()[0])
    for table in ("job_events", "job_attempts"):
        tcols = [c for c in _columns(db, conn, table) if c != "job_id"]
        tlist = ", ".join(tcols)
        sel = ", ".join(f"t.{c}" for c in tcols)
        conn.execute(f"INSERT INTO {table} (job_id, {tlist}) SELECT j.id, {sel} "
                     f"FROM jobs j, {table} t WHERE j.id BETWEEN {lo} AND {hi} "
                     f"AND t.job_id = {int(template_id)}")
    conn.execute("COMMIT")
    return lo, hi


def build(backend: str, queued: int, finished: int) -> tuple[TetherDB, Tether, float]:
    db = TetherDB(backend, "w5")
    app = make_app(db.url)
    try:
        t = time.perf_counter()
        done = app.submit("noop")
        worker = app.worker(concurrency=1, poll_interval=0.05)
        worker.run(install_signals=False, max_jobs=1)
        if app.get(done.id).state.value != "succeeded":
            j = app.get(done.id)
            raise RuntimeError(f"template job ended {j.state.value}: {j.error_code} {j.error_summary}")
        template_q = app.submit("noop").id
        conn = db.connect()
        try:
            _copy(db, conn, done.id, finished - 1)
            _copy(db, conn, template_q, queued - 1)
        finally:
            conn.close()
    except BaseException:
        app.close()
        db.drop()
        raise
    return db, app, time.perf_counter() - t


def analyze(db: TetherDB) -> None:
    conn = db.connect()
    try:
        for table in TABLES:
            conn.execute(f"ANALYZE {table}")
    finally:
        conn.close()


def measure_claims(app: Tether, samples: int, batch: int) -> dict:
    store = app.store
    times = []
    got = 0
    for i in range(samples):
        t = time.perf_counter()
        claims = store.claim("bench-w5", queues=None, limit=batch, lease_ttl=600.0)
        times.append(time.perf_counter() - t)
        got += len(claims)
    return {"median_ms": median(times) * 1000, "claimed": got}


SCENARIOS = {
    "queued_small": lambda sz: (sz.claim_small, 1),
    "queued_big": lambda sz: (sz.claim_big, 1),
    "finished_big": lambda sz: (sz.claim_small, sz.claim_finished),
}


def run(backend: str, sz, env) -> dict:
    out: dict = {"tether": {}}
    for name, shape in SCENARIOS.items():
        queued, finished = shape(sz)
        env.log(f"W5 {backend} building {name}: {queued} queued, {finished} finished")
        db, app, build_s = build(backend, queued, finished)
        try:
            fresh = None
            if backend == "postgres":
                # Right after the bulk load, before autovacuum has analyzed it: the plan the
                # planner picks on stale statistics (W1's situation after submit_many).
                fresh = measure_claims(app, PRE_ANALYZE_SAMPLES, sz.claim_batch)
                analyze(db)
            runs = []
            for r in range(env.runs):
                runs.append(measure_claims(app, sz.claim_samples // env.runs or 1,
                                           sz.claim_batch))
            res = {"median_ms": median(r["median_ms"] for r in runs),
                   "claimed": sum(r["claimed"] for r in runs), "queued": queued,
                   "finished": finished, "build_s": build_s, "runs": runs}
            if fresh is not None:
                res["before_analyze_ms"] = fresh["median_ms"]
            expected = sum((sz.claim_samples // env.runs or 1) * sz.claim_batch for _ in runs)
            if res["claimed"] < min(expected, queued):
                res["error"] = (f"claimed {res['claimed']} of {min(expected, queued)} "
                                "expected: synthetic rows no longer match the schema?")
            out["tether"][name] = res
            env.log(f"   -> {res['median_ms']:.2f} ms per claim of {sz.claim_batch} "
                    f"(built in {build_s:.0f}s)")
        finally:
            app.close()
            db.drop()
    t = out["tether"]
    small = t["queued_small"]["median_ms"]
    out["ratio_queued_big"] = ratio(t["queued_big"]["median_ms"], small)
    out["ratio_finished_big"] = ratio(t["finished_big"]["median_ms"], small)
    if backend == "postgres":
        out["ratio_queued_big_before_analyze"] = ratio(t["queued_big"].get("before_analyze_ms"),
                                                       t["queued_small"].get("before_analyze_ms"))
    return out
