"""SQL functions SQLite lacks, registered on every connection the SQLite store opens.

* ``tether_decimal_sum(text)``: an aggregate summing money kept as decimal text exactly.
  SQLite's ``sum()`` would read each value as a float and drift by fractions of a cent over
  many rows; the ledger's promise is to the cent and beyond, as PostgreSQL's ``numeric`` is.
* ``tether_decimal_add(text, text)``: the exact sum of two such amounts (a running total's
  upsert adds to its row with it, in one call instead of an aggregate's subquery).
* ``tether_utc_offset(unix_seconds, zone)``: the zone's offset from UTC at that instant, in
  seconds (daylight saving included), so calendar buckets can be taken in a zone SQLite does
  not know (its ``localtime`` only knows the process's own zone).

They run inside SQLite's own evaluation of the statement (GROUP BY and all): the rows never
come back to the caller one by one.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, UTC
from decimal import Context, Decimal, localcontext
from functools import lru_cache
from zoneinfo import ZoneInfo

_EXACT = Context(prec=200)
"""Enough digits that no realistic sum of ledger amounts is ever rounded."""


class _DecimalSum:
    """The values are collected by the list's own ``append`` (SQLite calls it directly, with
    no Python frame per row: about four times faster than a ``step`` method over 200,000
    rows) and summed once per group. A group's values are held until then; SQLite finishes
    one group before it starts the next."""

    __slots__ = ("values", "step")

    def __init__(self) -> None:
        self.values: list[object] = []
        self.step = self.values.append

    def finalize(self) -> str | None:
        values = [str(v) for v in self.values if v is not None]
        if not values:
            return None
        with localcontext(_EXACT):
            return str(sum(map(Decimal, values), Decimal(0)))


def _decimal_add(a: object, b: object) -> str | None:
    if a is None or b is None:
        return None
    with localcontext(_EXACT):
        return str(Decimal(str(a)) + Decimal(str(b)))


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def _utc_offset(ts: float | None, zone: str | None) -> float | None:
    if ts is None or zone is None:
        return None
    offset = datetime.fromtimestamp(float(ts), UTC).astimezone(_zone(zone)).utcoffset()
    return offset.total_seconds() if offset is not None else 0.0


def install(conn: sqlite3.Connection) -> None:
    """Register tether's functions on ``conn``."""
    conn.create_aggregate("tether_decimal_sum", 1, _DecimalSum)  # type: ignore[arg-type]
    conn.create_function("tether_decimal_add", 2, _decimal_add, deterministic=True)
    conn.create_function("tether_utc_offset", 2, _utc_offset, deterministic=True)
