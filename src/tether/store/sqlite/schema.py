"""Applying the SQLite migrations: each file once, in order, in its own write transaction.

A migration may edit a table's definition in place (``PRAGMA writable_schema``, for changes that
leave every stored row valid, such as widening a CHECK list); the schema cookie is then bumped
so that every connection, this one too, reloads the definition.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from ..migrate import discover

_WRITABLE_SCHEMA_OFF = re.compile(r"(?i)^PRAGMA\s+writable_schema\s*=\s*(OFF|0|false)$")


def apply_migrations(c: sqlite3.Connection, folder: Path,
                     immediate: Callable[[sqlite3.Connection], AbstractContextManager[None]]
                     ) -> list[int]:
    """Apply the pending migrations of ``folder`` on ``c``; ``immediate(c)`` is a write
    transaction. Returns the versions applied."""
    with immediate(c):
        c.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                  "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)")
    applied = []
    for m in discover(folder):
        with immediate(c):
            if c.execute("SELECT 1 FROM schema_migrations WHERE version = ?",
                         (m.version,)).fetchone():
                continue
            for statement in split_sql(m.sql):
                if _WRITABLE_SCHEMA_OFF.match(statement):
                    version = c.execute("PRAGMA schema_version").fetchone()[0]
                    c.execute(f"PRAGMA schema_version = {int(version) + 1}")
                c.execute(statement)
            c.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                      (m.version, m.name, time.time()))
            applied.append(m.version)
    return applied


def split_sql(sql: str) -> list[str]:
    """Statements of a migration file, a trigger's body with its inner semicolons included
    (a statement ends where ``sqlite3.complete_statement`` says it does)."""
    statements, pending = [], ""
    for line in sql.splitlines():
        if line.strip().startswith("--"):
            continue
        pending += line + "\n"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().rstrip(";").strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return [s for s in statements if s]
