"""W5 claim cost: median time of ``store.claim(limit=claim_batch)`` with a small queue, a big
queue, and a small queue beside a big table of finished jobs. Ratios big/small must stay near 1.

The big tables are synthetic but valid: tether itself writes one template job of each kind
(a queued job; a job run to ``succeeded`` by an in-process worker, with its events and attempt),
then bulk SQL copies every column of the template rows (jobs, job_events, job_attempts) under
new ids: rows the engine could have written, built in seconds instead of hours. PostgreSQL
claims are timed twice: right after the bulk load (stale planner statistics, as after a big
``submit_many`` before autovacuum gets to it: ``before_analyze_ms``) and after VACUUM ANALYZE
and a CHECKPOINT (the steady state the ratios use); SQLite after a WAL checkpoint. A claim that returns nothing is reported as an error: it would mean the
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
    """What the database's own maintenance does after a bulk load, done now so that the
    timed claims measure claiming, not the load's aftermath: PostgreSQL VACUUM ANALYZE
    (autovacuum would run it on a table that grew by 1 M rows) and a CHECKPOINT (so a
    checkpoint writing the load's dirty pages does not land among the samples); SQLite a
    WAL checkpoint (its own automatic one would run at the next commits)."""
    conn = db.connect()
    try:
        if db.backend == "sqlite":
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return
        for table in TABLES:
            conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("CHECKPOINT")
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


ROUNDS = 10  # the timed claims of every scenario are taken in this many interleaved turns


def run(backend: str, sz, env) -> dict:
    """All three tables are built first, then claimed from in turns (a slice of each scenario's
    samples per turn), so the disk's swings in flush time land on every scenario alike instead
    of on whichever was measured during a slow minute."""
    out: dict = {"tether": {}}
    built: dict[str, tuple] = {}
    try:
        for name, shape in SCENARIOS.items():
            queued, finished = shape(sz)
            env.log(f"W5 {backend} building {name}: {queued} queued, {finished} finished")
            db, app, build_s = build(backend, queued, finished)
            built[name] = (db, app)
            fresh = None
            if backend == "postgres":
                # Right after the bulk load, before autovacuum has analyzed it: the plan the
                # planner picks on stale statistics (W1's situation after submit_many).
                fresh = measure_claims(app, PRE_ANALYZE_SAMPLES, sz.claim_batch)
            analyze(db)
            out["tether"][name] = {"queued": queued, "finished": finished, "build_s": build_s,
                                   "runs": []}
            if fresh is not None:
                out["tether"][name]["before_analyze_ms"] = fresh["median_ms"]
        per_turn = max(1, sz.claim_samples // (env.runs * ROUNDS))
        for r in range(env.runs):
            turns: dict[str, list] = {name: [] for name in built}
            for _ in range(ROUNDS):
                for name, (_, app) in built.items():
                    turns[name].append(measure_claims(app, per_turn, sz.claim_batch))
            for name, got in turns.items():
                out["tether"][name]["runs"].append({
                    "median_ms": median(g["median_ms"] for g in got),
                    "claimed": sum(g["claimed"] for g in got)})
        for name, res in out["tether"].items():
            runs = res["runs"]
            res["median_ms"] = median(x["median_ms"] for x in runs)
            res["claimed"] = sum(x["claimed"] for x in runs)
            expected = per_turn * ROUNDS * env.runs * sz.claim_batch
            if res["claimed"] < min(expected, res["queued"]):
                res["error"] = (f"claimed {res['claimed']} of {min(expected, res['queued'])} "
                                "expected: synthetic rows no longer match the schema?")
            env.log(f"   -> {name}: {res['median_ms']:.2f} ms per claim of {sz.claim_batch} "
                    f"(built in {res['build_s']:.0f}s)")
    finally:
        for db, app in built.values():
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
