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
import uuid
from collections.abc import Iterator
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


_FINGERPRINT = """
SELECT md5(coalesce(string_agg(x, ',' ORDER BY x), '')) FROM (
    SELECT 'c:' || c.relname || ':' || c.relkind::text || ':' || c.relpages || ':' || c.reltuples
           || ':' || coalesce(array_to_string(c.reloptions, ';'), '') AS x
      FROM pg_class c WHERE c.relnamespace = %(s)s::regnamespace
    UNION ALL
    SELECT 'a:' || c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod)
           || ':' || a.attnotnull || ':' || a.attgenerated::text || ':' || a.attidentity::text
           || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE c.relnamespace = %(s)s::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'k:' || conname || ':' || pg_get_constraintdef(k.oid)
      FROM pg_constraint k WHERE k.connamespace = %(s)s::regnamespace
    UNION ALL
    SELECT 't:' || t.tgname || ':' || t.tgenabled::text || ':' || pg_get_triggerdef(t.oid)
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     WHERE c.relnamespace = %(s)s::regnamespace
    UNION ALL
    SELECT 'f:' || p.oid::regprocedure::text || ':' || md5(p.prosrc)
      FROM pg_proc p WHERE p.pronamespace = %(s)s::regnamespace
    UNION ALL
    SELECT 's:' || count(*) FROM pg_statistic st JOIN pg_class c ON c.oid = st.starelid
     WHERE c.relnamespace = %(s)s::regnamespace
    UNION ALL
    SELECT 'p:' || polname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
     WHERE c.relnamespace = %(s)s::regnamespace
) parts
"""
"""Everything about a schema that a test could change and ``TRUNCATE`` would not put back:
relations (with the planner's size estimates), columns, constraints, triggers, functions,
gathered statistics, row policies."""


class _Slot:
    """One migrated schema of the pool, with what it held right after migrating."""

    def __init__(self, base: str, schema: str) -> None:
        self.base, self.schema = base, schema
        self.url = f"{with_search_path(base, schema)}&application_name={schema}"
        with psycopg.connect(base, autocommit=True) as conn:
            self.tables = [r[0] for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename",
                (schema,))]
            self.seeds: dict[str, bytes] = {}
            for table in self.tables:
                name = sql.Identifier(schema, table)
                if conn.execute(sql.SQL("SELECT EXISTS (SELECT FROM {})").format(name)
                                ).fetchone()[0]:
                    with conn.cursor().copy(sql.SQL("COPY {} TO STDOUT").format(name)) as cp:
                        self.seeds[table] = b"".join(bytes(chunk) for chunk in cp)
            self.sequences = [r[0] for r in conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace "
                "AND relkind = 'S' ORDER BY relname", (schema,))]
            self.positions = self._positions(conn)
            self.sizes = conn.execute(
                "SELECT oid, relpages, reltuples FROM pg_class "
                "WHERE relnamespace = %s::regnamespace", (schema,)).fetchall()
            self.fingerprint = conn.execute(_FINGERPRINT, {"s": schema}).fetchone()[0]

    def _positions(self, conn: psycopg.Connection) -> list[tuple[int, bool]]:
        """(last_value, is_called) of each sequence, read from the sequences themselves (the
        ``pg_sequences`` view reads every sequence of the database)."""
        return [conn.execute(sql.SQL("SELECT last_value, is_called FROM {}").format(
            sql.Identifier(self.schema, seq))).fetchone() for seq in self.sequences]

    def reset(self) -> bool:
        """Put the schema back as migration left it; False (and nothing kept) if it cannot be
        shown to be: a connection of the last test still open, or anything but rows changed."""
        try:
            with psycopg.connect(self.base, autocommit=True) as conn:
                conn.execute("SET lock_timeout = '2s'")
                if conn.execute("SELECT count(*) FROM pg_stat_activity "
                                "WHERE application_name = %s", (self.schema,)).fetchone()[0]:
                    return False
                with conn.transaction():
                    written = [r[0] for r in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = %s AND "
                        "pg_relation_size(format('%%I.%%I', schemaname, tablename)) > 0",
                        (self.schema,))]
                    if written:
                        conn.execute(sql.SQL("TRUNCATE {} CASCADE").format(sql.SQL(", ").join(
                            sql.Identifier(self.schema, t) for t in written)))
                    for table in written:
                        if table in self.seeds:
                            with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(
                                    sql.Identifier(self.schema, table))) as cp:
                                cp.write(self.seeds[table])
                    for seq, now, then in zip(self.sequences, self._positions(conn),
                                              self.positions):
                        if now != then:
                            conn.execute("SELECT setval(%s::regclass, %s, %s)",
                                         (f'"{self.schema}"."{seq}"', *then))
                    with conn.cursor() as cur:
                        cur.executemany("UPDATE pg_class SET relpages = %s, reltuples = %s "
                                        "WHERE oid = %s AND (relpages, reltuples) <> (%s, %s)",
                                        [(p, t, oid, p, t) for oid, p, t in self.sizes])
                    if conn.execute(_FINGERPRINT, {"s": self.schema}).fetchone()[0] \
                            != self.fingerprint:
                        raise _Changed
        except (psycopg.Error, _Changed):
            return False
        return True


class _Changed(Exception):
    pass


_free: list[_Slot] = []


def migrated_schema_url(base: str) -> Iterator[str]:
    """(A generator for a fixture) a schema on the server at ``base`` with every migration
    applied and no rows but those the migrations write, as a fresh one migrated for this test
    would be; the URL names the schema as ``application_name`` too.

    Migrating costs far more than the test itself for most contract tests, so a schema is
    migrated once and reused: after the test it is truncated, its migration rows and sequences
    restored, and kept for the next test only if nothing else is left of the test (no open
    connection, the same relations, columns, constraints, triggers, functions and planner
    statistics as after migrating); otherwise it is left to be dropped at exit."""
    slot = _free.pop() if _free else None
    if slot is None:
        from tether import Tether
        schema = f"t_{uuid.uuid4().hex[:12]}"
        app = Tether(fresh_schema_url(base, schema))
        app.migrate()
        app.close()
        slot = _Slot(base, schema)
    yield slot.url
    if slot.reset():
        _free.append(slot)
