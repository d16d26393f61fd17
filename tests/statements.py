"""Which named statements (``queries/*.sql``) a store runs: a test's window onto the SQL behind a
facade call, on either backend."""

from __future__ import annotations

from contextlib import contextmanager
from collections.abc import Iterator
from typing import Any

import pytest

from tether.store.postgres.tx import QUERIES as PG_QUERIES, PgTx
from tether.store.sqlite.tx import QUERIES as SQLITE_QUERIES, SQLiteTx

SQL = {SQLiteTx: SQLITE_QUERIES, PgTx: PG_QUERIES}


@contextmanager
def recorded() -> Iterator[list[tuple[str, str, dict[str, Any]]]]:
    """Every named statement run inside, as (name, its SQL, its parameters), in order."""
    seen: list[tuple[str, str, dict[str, Any]]] = []
    with pytest.MonkeyPatch.context() as mp:
        for cls, queries in SQL.items():
            for method in ("one", "all", "run"):
                def wrapper(self: Any, _q: str, _orig: Any = getattr(cls, method),
                            _sql: Any = queries, **params: Any) -> Any:
                    seen.append((_q, str(_sql[_q]), dict(params)))
                    return _orig(self, _q, **params)
                mp.setattr(cls, method, wrapper)
            def many(self: Any, _q: str, rows: Any, _orig: Any = cls.many,
                     _sql: Any = queries) -> Any:
                seen.append((_q, str(_sql[_q]), {}))
                return _orig(self, _q, rows)
            mp.setattr(cls, "many", many)
        yield seen
