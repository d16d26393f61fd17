"""W10's big tables: millions of finished jobs with their events and attempts, built with bulk
SQL (``generate_series`` on PostgreSQL, a recursive CTE on SQLite), not through the engine.

As in W5, tether itself writes the template rows: a ``noop`` job run to ``succeeded`` and a
``fail`` job run to ``failed`` (one attempt) by an in-process worker, and a queued job. Every
column of those rows (jobs, job_events, job_attempts) is then copied under new ids, except
what makes the copies a plausible history: every ``failed_every``-th job is a failed copy (so
failures are spread over the whole id range, not bunched at the end), projects, queues and
types rotate over a few names, and finish times are spread evenly over ``span_s`` up to the
load, oldest id first (so a prune by age takes the oldest ids). Queued copies come last (the
newest ids, as live work is). Each finished copy also has one cost-ledger row (a paid call,
two models alternating), so what reads the ledger reads as many rows as there are jobs.

To load in minutes, the secondary indexes of the four tables are dropped before the load and
created again after it from their own definitions (the tables end as tether creates them,
with freshly built indexes), and on PostgreSQL the loading session runs with
``session_replication_role = replica`` (no foreign-key checks or triggers for rows that are
valid by construction) and ``synchronous_commit = off``. The tables stay ordinary logged
tables.
"""

from __future__ import annotations

import time

from tether import Tether

from ..apps import make_app
from ..backends import TetherDB

TABLES = ("jobs", "job_events", "job_attempts", "cost_ledger")
PROJECTS = 4
QUEUES = 3
TYPES = ("summarize", "embed", "classify")
CHUNK = 1_000_000  # job ids a PostgreSQL statement copies


def _fail(ctx, payload):
    raise RuntimeError("W10 template failure")


def columns(db: TetherDB, conn, table: str) -> list[str]:
    if db.backend == "sqlite":
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]
    rows = conn.execute("SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND table_name = %s "
                        "ORDER BY ordinal_position", (table,)).fetchall()
    return [r[0] for r in rows]


def _secondary_indexes(db: TetherDB, conn) -> list[tuple[str, str]]:
    """(name, CREATE statement) of the four tables' indexes that no constraint owns."""
    if db.backend == "sqlite":
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND "
                            "sql IS NOT NULL AND tbl_name IN ('jobs', 'job_events', "
                            "'job_attempts', 'cost_ledger')").fetchall()
        return [(r[0], r[1]) for r in rows]
    rows = conn.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = current_schema() "
        "AND i.tablename IN ('jobs', 'job_events', 'job_attempts', 'cost_ledger') "
        "AND NOT EXISTS (SELECT 1 "
        "FROM pg_constraint c WHERE c.conname = i.indexname "
        "AND c.connamespace = current_schema()::regnamespace)").fetchall()
    return [(r[0], r[1]) for r in rows]


def _time(db: TetherDB, seconds: str) -> str:
    return seconds if db.backend == "sqlite" else f"to_timestamp({seconds})"


def _pick(options: tuple[str, ...] | list[str], n: str) -> str:
    whens = " ".join(f"WHEN {i} THEN '{o}'" for i, o in enumerate(options))
    return f"CASE ({n}) % {len(options)} {whens} END"


def _copy_chunk(db: TetherDB, conn, templates: dict, lo: int, hi: int, *, first_id: int,
                finished: bool, failed_every: int, t0: float, step: float) -> None:
    """Jobs ``first_id + x`` for x in [lo, hi], then their events and attempts."""
    cols = columns(db, conn, "jobs")
    if finished:
        template = (f"CASE WHEN x % {failed_every} = 0 THEN {templates['failed']} "
                    f"ELSE {templates['succeeded']} END")
        fin = f"({t0!r} + x * {step!r})"
        # projects by tens: every project gets its share of the failed (x % 10 = 0) jobs
        over = {"project": _pick([f"proj-{i}" for i in range(PROJECTS)], "x / 10"),
                "queue": _pick([f"queue-{i}" for i in range(QUEUES)], "x"),
                "type": _pick(TYPES, "x / 7"),
                "created_at": _time(db, f"{fin} - 2"), "run_after": _time(db, f"{fin} - 2"),
                "updated_at": _time(db, fin), "finished_at": _time(db, fin)}
    else:
        template = str(templates["queued"])
        over = {"project": _pick([f"proj-{i}" for i in range(PROJECTS)], "x"),
                "queue": _pick([f"queue-{i}" for i in range(QUEUES)], "x")}
    over["id"] = f"{first_id} + x"
    sel = ", ".join(over.get(c, f"t.{c}") for c in cols)
    if db.backend == "sqlite":
        series = (f"(WITH RECURSIVE s(x) AS (SELECT {lo} UNION ALL SELECT x + 1 FROM s "
                  f"WHERE x < {hi}) SELECT x FROM s) AS g")
    else:
        series = f"generate_series({lo}, {hi}) AS g(x)"
    conn.execute(f"INSERT INTO jobs ({', '.join(cols)}) SELECT {sel} FROM {series} "
                 f"JOIN w10_t_jobs t ON t.id = {template} ORDER BY x")
    tpl = (f"CASE WHEN j.state = 'failed' THEN {templates['failed']} "
           f"WHEN j.state = 'succeeded' THEN {templates['succeeded']} "
           f"ELSE {templates['queued']} END")
    at = {"job_events": {"at": "CASE WHEN t.seq = 1 THEN j.created_at ELSE j.finished_at END"},
          "job_attempts": {"claimed_at": "j.created_at", "started_at": "j.created_at",
                           "finished_at": "j.finished_at"}}
    for table in ("job_events", "job_attempts"):
        tcols = columns(db, conn, table)
        over_t = dict(at[table], job_id="j.id") if finished else {"job_id": "j.id"}
        tsel = ", ".join(over_t.get(c, f"t.{c}") for c in tcols)
        conn.execute(f"INSERT INTO {table} ({', '.join(tcols)}) SELECT {tsel} FROM jobs j "
                     f"JOIN w10_t_{table} t ON t.job_id = {tpl} "
                     f"WHERE j.id BETWEEN {first_id + lo} AND {first_id + hi}")
    if finished:  # one paid call a finished job, as an LLM pipeline's would be
        conn.execute(
            "INSERT INTO cost_ledger (job_id, project, key, attempt, provider, model, "
            "input_tokens, output_tokens, input_per_mtok, output_per_mtok, price_profile, "
            "cost_usd, reserved_usd, confirmed, created_at) SELECT j.id, j.project, 'call', 1, "
            "'simulated', CASE j.id % 2 WHEN 0 THEN 'sim-small' ELSE 'sim-large' END, 100, 200, "
            "'0.5', '1.5', 'w10', '0.00035', '0.0005', true, j.finished_at FROM jobs j "
            f"WHERE j.id BETWEEN {first_id + lo} AND {first_id + hi}")


def build(backend: str, *, finished: int, queued: int, failed_every: int, span_s: float,
          log=lambda msg: None) -> tuple[TetherDB, Tether, dict]:
    """A tether database with ``finished`` finished jobs (every ``failed_every``-th failed)
    finishing evenly over the ``span_s`` seconds before the load, then ``queued`` queued
    jobs. Returns the database, an app on it, and what was built (ids, times, seconds)."""
    db = TetherDB(backend, "w10")
    app = make_app(db.url)
    app.register("fail", _fail, max_attempts=1)
    try:
        started = time.perf_counter()
        ok, bad = app.submit("noop"), app.submit("fail")
        app.worker(concurrency=1, poll_interval=0.05).run(install_signals=False, max_jobs=2)
        for job, want in ((ok, "succeeded"), (bad, "failed")):
            state = app.get(job.id).state.value
            if state != want:
                raise RuntimeError(f"template {job.type} ended {state}, not {want}")
        templates = {"succeeded": ok.id, "failed": bad.id, "queued": app.submit("noop").id}
        conn = db.connect()
        try:
            info = _load(db, conn, templates, finished=finished, queued=queued,
                         failed_every=failed_every, span_s=span_s, log=log)
        finally:
            conn.close()
        info["build_s"] = time.perf_counter() - started
    except BaseException:
        app.close()
        db.drop()
        raise
    return db, app, info


def _load(db: TetherDB, conn, templates: dict, *, finished: int, queued: int,
          failed_every: int, span_s: float, log) -> dict:
    t0 = time.time() - span_s
    step = span_s / max(1, finished)
    first_id = int(conn.execute("SELECT max(id) FROM jobs").fetchone()[0])
    indexes = _secondary_indexes(db, conn)
    ids = ", ".join(str(i) for i in templates.values())
    # The template rows in tables of their own: a join against the growing tables would
    # make every chunk slower than the last.
    conn.execute(f"CREATE TEMP TABLE w10_t_jobs AS SELECT * FROM jobs WHERE id IN ({ids})")
    for table in ("job_events", "job_attempts"):
        conn.execute(f"CREATE TEMP TABLE w10_t_{table} AS SELECT * FROM {table} "
                     f"WHERE job_id IN ({ids})")
    if db.backend == "postgres":
        conn.execute("SET session_replication_role = replica")
        conn.execute("SET synchronous_commit = off")
        conn.execute("SET maintenance_work_mem = '512MB'")
    false = "0" if db.backend == "sqlite" else "false"
    for q in range(QUEUES):  # as a submit would have made them: what lists queues reads them
        conn.execute(f"INSERT INTO queues (name, paused, updated_at) VALUES ('queue-{q}', "
                     f"{false}, {_time(db, repr(time.time()))}) ON CONFLICT (name) DO NOTHING")
    for name, _ in indexes:
        conn.execute(f"DROP INDEX {name}")
    loaded = time.perf_counter()
    for lo in range(1, finished + 1, CHUNK):
        hi = min(finished, lo + CHUNK - 1)
        _in_tx(db, conn, lambda: _copy_chunk(db, conn, templates, lo, hi, first_id=first_id,
                                             finished=True, failed_every=failed_every, t0=t0,
                                             step=step))
        log(f"W10 {db.backend}: {hi:,} finished jobs loaded "
            f"({time.perf_counter() - loaded:.0f}s)")
    if queued:
        _in_tx(db, conn, lambda: _copy_chunk(db, conn, templates, finished + 1,
                                             finished + queued, first_id=first_id,
                                             finished=False, failed_every=failed_every,
                                             t0=t0, step=step))
    load_s = time.perf_counter() - loaded
    indexed = time.perf_counter()
    for _, create in indexes:
        conn.execute(create)
    if db.backend == "postgres":
        conn.execute("SELECT setval(pg_get_serial_sequence('jobs', 'id'), "
                     "(SELECT max(id) FROM jobs))")
        conn.execute("RESET session_replication_role")
        for table in TABLES:
            conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("CHECKPOINT")
    else:  # not ANALYZEd: tether never runs ANALYZE on SQLite, so users' planners have no stats
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"first_id": first_id + 1, "t0": t0, "span_s": span_s, "load_s": load_s,
            "index_analyze_s": time.perf_counter() - indexed, "templates": templates}


def _in_tx(db: TetherDB, conn, fn) -> None:
    conn.execute("BEGIN IMMEDIATE" if db.backend == "sqlite" else "BEGIN")
    try:
        fn()
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
