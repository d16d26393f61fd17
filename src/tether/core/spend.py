"""Spend reports: what a report groups by, over which time window, and the rows it returns.

A spend report groups the cost ledger (one row per settled call) by any of ``DIMENSIONS`` in
any order and totals each group: calls, tokens, cost and the reservations behind them. The
grouping and summing happen in the database (``store/spend.py``); this module only checks the
question and holds the answer, so the library, the CLI, REST and MCP refuse the same input
with the same code (``invalid_argument``) and present the same numbers.

Time buckets (``day``, ``week`` starting Monday, ``month``) are calendar periods of UTC unless
a time zone (an IANA name such as ``Europe/Paris``) is given: a call made at 23:30 UTC on
1 May falls on 2 May in Paris. A bucket is named by its first day (``2026-05-01``; a month by
``2026-05``). The window is half-open: ``since <= created_at < until``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from datetime import datetime, UTC
from decimal import Decimal
from typing import Any
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from zoneinfo import available_timezones

from ..errors import InvalidArgument
from .budget import BudgetStatus

DIMENSIONS = ("project", "provider", "model", "job_type", "stage", "day", "week", "month")
"""What a report may group by. ``job_type`` is the type of the job that made the call."""
PERIODS = ("day", "week", "month")
DEFAULT_BY = ("project", "model", "day")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_RELATIVE = re.compile(r"^(?:\d+[smhdw])+$")
_PART = re.compile(r"(\d+)([smhdw])")
_D0 = Decimal(0)
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC).timestamp()
_LATEST = datetime(9999, 12, 30, tzinfo=UTC).timestamp()

When = datetime | float | int | str | None
"""A window edge as the facade takes it (see ``parse_time``)."""


def money_text(amount: Decimal) -> str:
    """Money as plain fixed-point text without trailing zeros (``"0"``, ``"0.0000125"``),
    never an exponent, whichever backend summed it (the wire's canonical form)."""
    return "0" if amount == 0 else format(amount.normalize(), "f")


def parse_by(by: str | Iterable[str]) -> tuple[str, ...]:
    """The grouping as a tuple: ``"project,model"`` or ``("project", "model")``; each name
    once, each one of ``DIMENSIONS``. Empty means one row: the grand total."""
    names = [p.strip() for p in by.split(",")] if isinstance(by, str) else list(by)
    names = [n for n in names if n != ""]
    for name in names:
        if not isinstance(name, str) or name not in DIMENSIONS:
            raise InvalidArgument(f"by: {name!r:.40} is not one of {', '.join(DIMENSIONS)}",
                                  argument="by")
    if len(set(names)) != len(names):
        raise InvalidArgument("by: each dimension may be named once", argument="by")
    return tuple(names)


def parse_time(value: When, *, now: float, what: str) -> float | None:
    """A window edge as unix seconds: ``None``; a datetime (naive means UTC); unix seconds; or
    text: a span back from ``now`` (``7d``, ``24h``, ``1h30m``, ``2w``) or ISO 8601. It must
    lie within the years 1 to 9999, the range both backends can compare with."""
    if value is None:
        return None
    try:
        ts = _seconds(value, now=now, what=what)
    except (OverflowError, ValueError):  # a span too long for a float, or for int()
        ts = float("nan")
    if not _EARLIEST <= ts <= _LATEST:  # also refuses NaN
        raise InvalidArgument(f"{what}: {value!r:.60} is outside the years 1 to 9999",
                              argument=what)
    return ts


def _seconds(value: When, *, now: float, what: str) -> float:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        raw = value.strip().lower()
        if _RELATIVE.match(raw):
            return now - sum(int(n) * _UNITS[u] for n, u in _PART.findall(raw))
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            pass
        else:
            return _seconds(moment, now=now, what=what)
    raise InvalidArgument(f"{what}: {value!r:.60} is not a time (use ISO 8601 such as "
                          "2026-05-01T00:00Z, or a span back from now such as 7d or 24h)",
                          argument=what)


@lru_cache(maxsize=1)
def _zones() -> frozenset[str]:
    # "localtime" names the zone of whichever machine reads it: the database server's own
    # on PostgreSQL, this process's on SQLite. A report must not depend on which.
    return frozenset(available_timezones()) - {"localtime"}


def zone(name: str | None) -> str | None:
    """``None`` (UTC) or an IANA time zone name; ``UTC`` itself comes back as ``None``."""
    if name is None or name == "UTC":
        return None
    if not isinstance(name, str) or name not in _zones():
        raise InvalidArgument(f"tz: {name!r:.60} is not a known time zone (use an IANA name "
                              "such as Europe/Paris)", argument="tz")
    return name


@dataclass(frozen=True)
class SpendQuery:
    """What the store is asked: the checked grouping, window (unix seconds) and scope."""

    by: tuple[str, ...]
    since: float | None = None
    until: float | None = None
    tz: str | None = None
    projects: tuple[str, ...] | None = None

    def flags(self) -> dict[str, bool]:
        """``by_<dimension>`` for every dimension: the statement's switches."""
        return {f"by_{d}": d in self.by for d in DIMENSIONS}


@dataclass(frozen=True)
class SpendRow:
    """One group's totals. The dimensions not grouped by are ``None`` (``stage`` is also
    ``None`` for calls made outside a stage). ``cost_usd`` counts unconfirmed calls (a crash
    left the outcome unknown) at their reservation, as the budget does."""

    project: str | None = None
    provider: str | None = None
    model: str | None = None
    job_type: str | None = None
    stage: str | None = None
    day: str | None = None
    week: str | None = None
    month: str | None = None
    calls: int = 0
    unconfirmed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = _D0
    reserved_usd: Decimal = _D0

    def key(self, by: Sequence[str]) -> tuple[str | None, ...]:
        return tuple(getattr(self, d) for d in by)

    def to_dict(self, by: Sequence[str] | None = None) -> dict[str, Any]:
        """Money as decimal strings; with ``by``, only those dimensions (in that order)."""
        dims = DIMENSIONS if by is None else by
        out: dict[str, Any] = {d: getattr(self, d) for d in dims}
        out.update(calls=self.calls, unconfirmed_calls=self.unconfirmed_calls,
                   input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                   cost_usd=money_text(self.cost_usd),
                   reserved_usd=money_text(self.reserved_usd))
        return out


_COUNTS = tuple(f.name for f in fields(SpendRow) if f.name not in DIMENSIONS)


def total(rows: Iterable[SpendRow]) -> SpendRow:
    """The sum of ``rows`` (exact: money is Decimal), with no dimension set."""
    sums: dict[str, Any] = dict.fromkeys(_COUNTS, 0)
    sums["cost_usd"] = sums["reserved_usd"] = _D0
    for row in rows:
        for name in _COUNTS:
            sums[name] += getattr(row, name)
    return SpendRow(**sums)


@dataclass(frozen=True)
class SpendReport:
    """``Tether.spend``'s answer: the rows ordered by the grouping, their total, and, when
    grouped by project, each project's budget (limits and what it has used to date) for
    burn-down charts."""

    by: tuple[str, ...]
    since: datetime | None
    until: datetime | None
    tz: str
    rows: list[SpendRow]
    total: SpendRow
    budgets: Mapping[str, BudgetStatus] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"by": list(self.by), "tz": self.tz,
                "since": self.since.isoformat() if self.since else None,
                "until": self.until.isoformat() if self.until else None,
                "rows": [r.to_dict(self.by) for r in self.rows],
                "total": self.total.to_dict(()),
                "budgets": {p: b.to_dict() for p, b in self.budgets.items()}}
