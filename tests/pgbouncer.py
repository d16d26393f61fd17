"""A PgBouncer of our own, in transaction pooling mode, for tests and the bench.

``PgBouncer(base)`` writes ``pgbouncer.ini`` and ``userlist.txt`` into a temp folder
(``auth_type = trust``, a free port, ``pool_mode = transaction``) and starts
``/usr/sbin/pgbouncer`` (or ``TETHER_TEST_PGBOUNCER``) in the foreground; ``stop()`` ends it.
PgBouncer refuses to run as root, so under root it is started with ``-u`` as the
``postgres`` user (else ``nobody``), and the folder is made readable to that user.

PgBouncer 1.18 refuses the ``options`` startup parameter, so a test's private schema cannot be
named in the URL as on a direct connection. Each schema gets a database entry of its own
instead (``database(schema)``), whose server connections run ``SET search_path`` once when
they connect (``connect_query``); in transaction mode PgBouncer resets nothing between
clients, so every transaction through that entry sees the schema. Entries are added while it
runs (the file is rewritten and the admin console told to ``RELOAD``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from tests.procs import free_port, wait_started

BINARY = Path(os.environ.get("TETHER_TEST_PGBOUNCER", "/usr/sbin/pgbouncer"))


def pgbouncer_problem() -> str | None:
    """Why no PgBouncer can be started here, or None."""
    if not BINARY.exists():
        return f"no pgbouncer at {BINARY} (apt-get install pgbouncer, or set TETHER_TEST_PGBOUNCER)"
    return None


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root with neither a 'postgres' nor a 'nobody' user")


class PgBouncer:
    """PgBouncer in transaction pooling mode in front of the server at ``base``
    (a ``postgresql://`` URL whose user and database the entries use)."""

    def __init__(self, base: str, *, pool_size: int = 20) -> None:
        params = conninfo_to_dict(base)
        self.server_host = params.get("host", "127.0.0.1")
        self.server_port = int(params.get("port", 5432))
        self.user = params.get("user", "postgres")
        self.dbname = params.get("dbname", "postgres")
        self.pool_size = pool_size
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="tether-pgbouncer-"))
        os.chmod(self.dir, 0o755)
        self.log = self.dir / "pgbouncer.log"
        self.entries: dict[str, str] = {}
        self.proc: subprocess.Popen | None = None

    # --- URLs ------------------------------------------------------------------------------------

    def url(self, alias: str) -> str:
        """A pooled URL for the entry ``alias``, marked ``pooler=transaction``."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{alias}?pooler=transaction"

    @property
    def admin_url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/pgbouncer"

    def database(self, schema: str, alias: str | None = None) -> str:
        """Add (or replace) an entry whose connections use ``schema``; its pooled URL."""
        alias = alias or f"db_{schema}"
        self.entries[alias] = (
            f"host={self.server_host} port={self.server_port} dbname={self.dbname} "
            f"user={self.user} connect_query='SET search_path TO \"{schema}\"'")
        self._write()
        if self.proc is not None:
            self.admin("RELOAD")
        return self.url(alias)

    # --- the process -----------------------------------------------------------------------------

    def _write(self) -> None:
        databases = "\n".join(f"{alias} = {spec}" for alias, spec in self.entries.items())
        (self.dir / "pgbouncer.ini").write_text(f"""\
[databases]
{databases}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.dir / "userlist.txt"}
admin_users = {self.user}
pool_mode = transaction
default_pool_size = {self.pool_size}
max_client_conn = 500
""")
        (self.dir / "userlist.txt").write_text(f'"{self.user}" ""\n')
        for name in ("pgbouncer.ini", "userlist.txt"):
            os.chmod(self.dir / name, 0o644)

    def start(self) -> "PgBouncer":
        self._write()
        user = _run_as()
        cmd = [str(BINARY), *(["-u", user] if user else []), str(self.dir / "pgbouncer.ini")]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

        def answers() -> bool:
            try:
                return self.admin("SHOW VERSION") is not None
            except psycopg.OperationalError:
                return False
        wait_started(answers, self.proc, what="pgbouncer's admin console", log=self.log)
        return self

    def admin(self, command: str) -> list[dict]:
        """Run ``command`` on the admin console (simple query protocol); its rows."""
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=3,
                             cursor_factory=psycopg.ClientCursor) as conn:
            cur = conn.execute(command)
            if cur.description is None:
                return []
            names = [d.name for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def stats(self, alias: str) -> dict | None:
        """``SHOW STATS`` for one entry (``total_xact_count``, ``total_query_count``...),
        None before any client used it."""
        return next((r for r in self.admin("SHOW STATS") if r["database"] == alias), None)

    def pools(self, alias: str) -> dict | None:
        """``SHOW POOLS`` for one entry (``pool_mode``, ``sv_active``, ``sv_idle``...),
        None before any client used it."""
        return next((r for r in self.admin("SHOW POOLS") if r["database"] == alias), None)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "PgBouncer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
