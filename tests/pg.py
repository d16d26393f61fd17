"""PostgreSQL for tests: a private schema per test on the shared server, and private servers.

``fresh_schema_url`` gives each test its own schema on the shared server (127.0.0.1:5432 by
default) through the ``options=-csearch_path=...`` connection parameter, and drops it when the
test process exits. ``PrivateServer`` is a throwaway PostgreSQL (initdb in a temp folder, a
free port) for tests that stop or restart the server; the shared one is never touched.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from tests.procs import free_port

PG_BIN = Path(os.environ.get("TETHER_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))

_created: list[tuple[str, str]] = []
_lock = threading.Lock()


def server_error(base: str) -> str | None:
    """None if the server at ``base`` answers, else why not."""
    try:
        with psycopg.connect(base, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return str(exc).strip() or type(exc).__name__
    return None


def with_search_path(base: str, schema: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options={quote(f'-csearch_path={schema}')}"


def fresh_schema_url(base: str, schema: str) -> str:
    """Create ``schema`` on the server at ``base``; a URL whose connections use only it."""
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    with _lock:
        if not _created:
            atexit.register(_drop_all)
        _created.append((base, schema))
    return with_search_path(base, schema)


def drop_schema(base: str, schema: str) -> None:
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _drop_all() -> None:
    for base, schema in _created:
        try:
            drop_schema(base, schema)
        except psycopg.Error:
            pass


def count_jobs(url: str, state: str) -> int:
    """Jobs in ``state``: one COUNT on a fresh connection, cheap enough to poll while workers run."""
    from tether.store.postgres.store import conninfo_from_url
    with psycopg.connect(conninfo_from_url(url)) as conn:
        return conn.execute("SELECT count(*) FROM jobs WHERE state = %s", (state,)).fetchone()[0]


def private_server_problem() -> str | None:
    """Why a private server cannot be started here (no binaries, no ``postgres`` user), or None."""
    if not (PG_BIN / "initdb").exists():
        return f"no initdb in {PG_BIN} (set TETHER_TEST_PG_BIN)"
    if os.geteuid() == 0:
        import pwd
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user for initdb"
    return None


class PrivateServer:
    """A PostgreSQL server of our own: ``initdb`` as the ``postgres`` OS user (initdb refuses
    root) into a temp folder, listening on 127.0.0.1 at a free port. Stop, start, restart."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tether-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
                  "--no-sync", "--no-instructions")

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(PG_BIN / tool), *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                f"-c max_connections=100")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"), "-o", opts,
                  "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def __enter__(self) -> "PrivateServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
