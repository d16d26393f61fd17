"""Fresh tether databases for each measurement, worker processes, and cheap progress counts.

SQLite: a new file under bench/results/scratch. PostgreSQL: a new schema in the database
``tether_bench`` (created on first use) reached through ``search_path``; peers get databases
of their own (``tether_bench_<peer>``). Only objects this harness created are ever dropped.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

from .config import PG_ADMIN_URL, PG_DB_PREFIX, ROOT, SCRATCH

BACKENDS = ("sqlite", "postgres")


def pg_url(dbname: str, admin: str = PG_ADMIN_URL) -> str:
    base, _, query = admin.partition("?")
    head, _, _ = base.rpartition("/")
    return f"{head}/{dbname}" + (f"?{query}" if query else "")


def pg_problem(admin: str = PG_ADMIN_URL) -> str | None:
    """None when the PostgreSQL server answers, else why not."""
    try:
        import psycopg
        with psycopg.connect(admin, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return str(exc).strip() or type(exc).__name__
    return None


def fresh_pg_database(name: str, admin: str = PG_ADMIN_URL) -> str:
    """Drop (if this harness left one) and create database ``tether_bench_<name>``."""
    import psycopg
    from psycopg import sql
    dbname = f"{PG_DB_PREFIX}_{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(dbname)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    return pg_url(dbname, admin)


def drop_pg_database(name: str, admin: str = PG_ADMIN_URL) -> None:
    import psycopg
    from psycopg import sql
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(f"{PG_DB_PREFIX}_{name}")))


def ensure_pg_database(admin: str = PG_ADMIN_URL) -> str:
    import psycopg
    from psycopg import sql
    with psycopg.connect(admin, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                             (PG_DB_PREFIX,)).fetchone()
        if not found:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(PG_DB_PREFIX)))
    return pg_url(PG_DB_PREFIX, admin)


class TetherDB:
    """One empty tether database: ``url`` for apps and workers, ``count`` for progress.

    On PostgreSQL a schema of ``tether_bench``, or with ``own_database`` a database of its
    own (``tether_bench_<label>``), for figures read per database (``pg_stat_database``)
    that another run in ``tether_bench`` must not touch."""

    def __init__(self, backend: str, label: str, *, own_database: bool = False) -> None:
        self.backend = backend
        self.label = f"{label}_{uuid.uuid4().hex[:6]}"
        if backend == "sqlite":
            SCRATCH.mkdir(parents=True, exist_ok=True)
            self.path = SCRATCH / f"{self.label}.db"
            self.url = f"sqlite:///{self.path}"
            self.schema = None
        elif own_database:
            self.dbname = f"{PG_DB_PREFIX}_{self.label}".lower()
            self.base = self.url = fresh_pg_database(self.label.lower())
            self.schema = None
        else:
            import psycopg
            self.dbname = PG_DB_PREFIX
            self.base = ensure_pg_database()
            self.schema = f"b_{self.label}".lower()
            with psycopg.connect(self.base, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{self.schema}"')
            sep = "&" if "?" in self.base else "?"
            self.url = f"{self.base}{sep}options={quote(f'-csearch_path={self.schema}')}"
        self._conn = None

    # --- direct SQL, for counting and for building big tables ---------------------------------

    def connect(self):
        if self.backend == "sqlite":
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA busy_timeout = 60000")
            return conn
        import psycopg
        from tether.store.postgres.store import conninfo_from_url
        return psycopg.connect(conninfo_from_url(self.url), autocommit=True)

    def scalar(self, sql: str, params: tuple = ()) -> object:
        if self._conn is None:
            self._conn = self.connect()
        if self.backend == "postgres":
            sql = sql.replace("?", "%s")
        return self._conn.execute(sql, params).fetchone()[0]

    def count(self, state: str = "succeeded") -> int:
        return int(self.scalar("SELECT count(*) FROM jobs WHERE state = ?", (state,)))

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None

    def drop(self) -> None:
        self.close()
        if self.backend == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(f"{self.path}{suffix}")
                except FileNotFoundError:
                    pass
        elif self.schema is None:
            drop_pg_database(self.label.lower())
        else:
            import psycopg
            with psycopg.connect(self.base, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


def pgbouncer_problem() -> str | None:
    """None when a PgBouncer can be started here, else why not."""
    from tests.pgbouncer import pgbouncer_problem as problem
    return problem()


def start_pgbouncer():
    """A PgBouncer in transaction pooling mode in front of ``tether_bench`` (the tests'
    helper: a temp folder, a free port, trust auth), started and stopped by ``with``;
    ``database(schema)`` adds an entry for a ``TetherDB`` schema, and returns its URL."""
    from tests.pgbouncer import PgBouncer
    return PgBouncer(ensure_pg_database())


def python_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    env.update(extra)
    return env


def log_file(name: str) -> Path:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    return SCRATCH / f"{name}.log"


def spawn(cmd: list[str], *, name: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    out = open(log_file(name), "wb")
    try:
        return subprocess.Popen(cmd, cwd=ROOT, env=env or python_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        out.close()


def tether_worker(url: str, *, concurrency: int, lease_ttl: float = 30.0,
                  poll_interval: float = 0.5, name: str = "tether-worker",
                  extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    env = python_env(**extra_env) if extra_env else None
    return spawn([sys.executable, "-m", "tether.worker", "--app", "bench.apps:app",
                  "--database-url", url, "--concurrency", str(concurrency),
                  "--lease-ttl", str(lease_ttl), "--poll-interval", str(poll_interval)],
                 name=name, env=env)


def stop(procs: list[subprocess.Popen], *, timeout: float = 15.0) -> None:
    """SIGTERM each process we started, then SIGKILL what is still alive after ``timeout``."""
    for p in procs:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def rss_kb(pid: int, field: str = "VmRSS") -> int | None:
    """Resident set size of ``pid`` from /proc (kB; ``field="VmHWM"``: its peak), None if it
    is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def wait_for(predicate, *, timeout: float, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            return value
        time.sleep(interval)


def _stat(path: Path | str) -> list[str] | None:
    """The fields of a /proc ``stat`` file after the command name (``[1]`` the parent pid,
    ``[11]``/``[12]`` user/system ticks, ``[13]``/``[14]`` those of reaped children); None
    if the process is gone."""
    try:
        return Path(path).read_text().rpartition(")")[2].split()
    except OSError:
        return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time ``pid`` has used so far (from /proc), None if it is gone."""
    fields = _stat(f"/proc/{pid}/stat")
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_seconds(admin: str = PG_ADMIN_URL) -> float | None:
    """User + system CPU the PostgreSQL server has used so far: the postmaster, its live
    children, and the children it has reaped (a backend that exits adds its CPU to the
    postmaster's children's times). None if the server's processes cannot be read here
    (another machine, or no /proc)."""
    try:
        import psycopg
        with psycopg.connect(admin, connect_timeout=3, autocommit=True) as conn:
            data = conn.execute("SHOW data_directory").fetchone()[0]
        postmaster = int(Path(data, "postmaster.pid").read_text().split()[0])
    except Exception:  # noqa: BLE001 - a figure the run can do without
        return None
    own = _stat(f"/proc/{postmaster}/stat")
    if own is None:
        return None
    total = sum(int(own[i]) for i in (11, 12, 13, 14))
    for path in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat(path)
        if fields is not None and int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")
