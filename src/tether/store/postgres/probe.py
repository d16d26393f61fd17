"""One direct connection before the pool opens: a server that cannot be reached, a database
that does not exist, or (for a store that may not create) a database without tether's schema
is one clear error at once, naming the URL without its password.

psycopg_pool would instead retry in the background until the pool's timeout, logging a
warning per try, and only then report that it timed out.
"""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

from ...errors import NoDatabase
from ..migrate import require_current
from ..urls import redact
from .retry import TransientStoreError, translate

MIGRATIONS = Path(__file__).parent / "migrations"
_NO_DATABASE = re.compile(r'database "[^"]*" does not exist')


def probe(conninfo: str, url: str, *, create: bool) -> None:
    """Connect once (the URL's ``connect_timeout``, else 5 s); with ``create`` False, also
    require tether's current schema in the connection's schema."""
    where = redact(url)
    try:
        conn = psycopg.connect(conninfo, autocommit=True)
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split())
        if _NO_DATABASE.search(reason):
            raise NoDatabase(f"no PostgreSQL database at {where} ({reason}): create it "
                             "(createdb), then run `tether db migrate` with this URL",
                             url=where) from exc
        raise TransientStoreError(f"cannot connect to PostgreSQL at {where}: {reason}") from exc
    try:
        with conn:
            if not create:
                require_current(_applied(conn), MIGRATIONS, where)
    except psycopg.Error as exc:
        raise translate(exc) from exc


def _applied(conn: psycopg.Connection[tuple[int]]) -> set[int] | None:
    """The versions in ``schema_migrations`` of the connection's current schema (None: no
    such table, or no schema on the search_path)."""
    if not conn.execute("SELECT 1 FROM pg_tables WHERE schemaname = current_schema() "
                        "AND tablename = 'schema_migrations'").fetchone():
        return None
    return {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
