"""SQL functions SQLite lacks, registered on every connection the SQLite store opens.

* ``tether_decimal_sum(text)``: an aggregate summing money kept as decimal text exactly.
  SQLite's ``sum()`` would read each value as a float and drift by fractions of a cent over
  many rows; the ledger's promise is to the cent and beyond, as PostgreSQL's ``numeric`` is.
* ``tether_utc_offset(unix_seconds, zone)``: the zone's offset from UTC at that instant, in
  seconds (daylight saving included), so calendar buckets can be taken in a zone SQLite does
  not know (its ``localtime`` only knows the process's own zone).

Both run inside SQLite's own evaluation of the statement (GROUP BY and all): the rows never
come back to the caller one by one.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from decimal import Context, Decimal
from functools import lru_cache
from zoneinfo import ZoneInfo

_EXACT = Context(prec=200)
"""Enough digits that no realistic sum of ledger amounts is ever rounded."""


class _DecimalSum:
    __slots__ = ("total", "seen")

    def __init__(self) -> None:
        self.total = Decimal(0)
        self.seen = False

    def step(self, value: object) -> None:
        if value is not None:
            self.total = _EXACT.add(self.total, Decimal(str(value)))
            self.seen = True

    def finalize(self) -> str | None:
        return str(self.total) if self.seen else None


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def _utc_offset(ts: float | None, zone: str | None) -> float | None:
    if ts is None or zone is None:
        return None
    offset = datetime.fromtimestamp(float(ts), timezone.utc).astimezone(_zone(zone)).utcoffset()
    return offset.total_seconds() if offset is not None else 0.0


def install(conn: sqlite3.Connection) -> None:
    """Register tether's functions on ``conn``."""
    conn.create_aggregate("tether_decimal_sum", 1, _DecimalSum)  # type: ignore[arg-type]
    conn.create_function("tether_utc_offset", 2, _utc_offset, deterministic=True)
