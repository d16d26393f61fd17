"""The databases' own limits on this machine, measured in the same run as everything else.

* PostgreSQL: ``pgbench`` with a custom script of one single-row INSERT per transaction,
  ``synchronous_commit=on`` (forced through PGOPTIONS), 1 client and ``ceiling_clients``
  clients (commits of concurrent clients share WAL flushes: group commit).
* SQLite: one connection, WAL, ``synchronous=FULL``, one single-row INSERT + COMMIT per
  transaction, for ``ceiling_seconds``, on the same disk as the benchmark's databases.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import time
import uuid

from .backends import SCRATCH, drop_pg_database, fresh_pg_database

PGBENCH_PATHS = ("pgbench", "/usr/lib/postgresql/15/bin/pgbench")
SCRIPT = "INSERT INTO ceiling (v) VALUES (1);\n"


def pgbench_path() -> str | None:
    for p in PGBENCH_PATHS:
        found = shutil.which(p)
        if found:
            return found
    return None


def pg_commits(seconds: float, clients: int) -> dict:
    exe = pgbench_path()
    if exe is None:
        return {"error": "pgbench not found"}
    import psycopg
    url = fresh_pg_database("ceiling")
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE ceiling (id bigserial PRIMARY KEY, v int NOT NULL, "
                         "at timestamptz NOT NULL DEFAULT now())")
            setting = conn.execute("SHOW synchronous_commit").fetchone()[0]
            fsync = conn.execute("SHOW fsync").fetchone()[0]
        SCRATCH.mkdir(parents=True, exist_ok=True)
        script = SCRATCH / "ceiling.sql"
        script.write_text(SCRIPT)
        out = {"synchronous_commit": setting, "fsync": fsync}
        for c in sorted({1, clients}):
            env = dict(os.environ, PGOPTIONS="-c synchronous_commit=on")
            proc = subprocess.run([exe, "-n", "-f", str(script), "-c", str(c), "-j", str(min(c, 2)),
                                   "-T", str(max(1, int(round(seconds)))), url],
                                  capture_output=True, text=True, timeout=seconds + 60, env=env)
            m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", proc.stdout)
            if not m:
                return {"error": f"pgbench failed: {proc.stderr[-300:] or proc.stdout[-300:]}"}
            out[f"tps_c{c}"] = float(m.group(1))
        out["commits_per_s"] = out["tps_c1"]
        return out
    finally:
        drop_pg_database("ceiling")


def sqlite_commits(seconds: float) -> dict:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    path = SCRATCH / f"ceiling-{uuid.uuid4().hex[:6]}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("CREATE TABLE ceiling (id INTEGER PRIMARY KEY, v INTEGER NOT NULL, "
                     "at REAL NOT NULL)")
        n = 0
        t = time.perf_counter()
        deadline = t + seconds
        while True:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO ceiling (v, at) VALUES (1, ?)", (time.time(),))
            conn.execute("COMMIT")
            n += 1
            if n % 16 == 0 and time.perf_counter() > deadline:
                break
        rate = n / (time.perf_counter() - t)
        return {"commits_per_s": rate, "journal_mode": "wal", "synchronous": "FULL"}
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{path}{suffix}")
            except FileNotFoundError:
                pass


def measure(backend: str, sz) -> dict:
    if backend == "sqlite":
        return sqlite_commits(sz.ceiling_seconds)
    return pg_commits(sz.ceiling_seconds, sz.ceiling_clients)
