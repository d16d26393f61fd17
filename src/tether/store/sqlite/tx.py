"""How the SQLite store runs its named statements (``queries/``, bound positionally) on a
connection, and how SQLite's errors become tether's: a full disk (or file size limit) is
``StorageFull``, a damaged file ``StoreCorrupt``, the rest ``StoreError``."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from ...errors import StorageFull, StoreCorrupt, StoreError
from ..queries import load_queries, positional

HERE = Path(__file__).parent
QUERIES = load_queries(HERE / "queries")
BOUND = {name: positional(sql) for name, sql in QUERIES.items()}


def translate(exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("disk is full" in text or
                                                      "disk I/O error" in text):
        return StorageFull(f"SQLite could not write: {text}")
    if "database disk image is malformed" in text or "file is not a database" in text:
        return StoreCorrupt(f"SQLite file is corrupt: {text}")
    return StoreError(f"SQLite error: {text}")


class SQLiteTx:
    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _rows(self, _q: str, params: dict[str, Any]) -> tuple[list[str], list[tuple]]:
        """Plain tuples and the column names once: ``dict(zip(...))`` per row is cheaper
        than ``dict(sqlite3.Row)``."""
        cur = self.conn.cursor()
        cur.row_factory = None
        sql, bind = BOUND[_q]
        cur.execute(sql, bind(params))
        rows = cur.fetchall()
        return ([d[0] for d in cur.description] if cur.description else []), rows

    def one(self, _q: str, **params: Any) -> dict[str, Any] | None:
        names, rows = self._rows(_q, params)
        return dict(zip(names, rows[0], strict=True)) if rows else None

    def all(self, _q: str, **params: Any) -> list[dict[str, Any]]:
        names, rows = self._rows(_q, params)
        return [dict(zip(names, r, strict=True)) for r in rows]

    def run(self, _q: str, **params: Any) -> int:
        sql, bind = BOUND[_q]
        return self.conn.execute(sql, bind(params)).rowcount

    def many(self, _q: str, rows: Sequence[dict[str, Any]]) -> None:
        sql, bind = BOUND[_q]
        self.conn.executemany(sql, map(bind, rows))

    def batch(self, *, commit: bool = False) -> AbstractContextManager[None]:
        """(PostgreSQL sends the writes inside together; here each runs as it comes.)"""
        return nullcontext()
