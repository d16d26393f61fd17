"""Budget periods: the calendar window (day, ISO week, month) a periodic limit counts in.

A periodic project budget limits what its calls may spend within the current window of its
time zone; the window is wall-clock time there (a day is midnight to midnight, 23 or 25 hours
long across a DST change). Windows are judged by the store's clock. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidPayload

PERIODS = ("day", "week", "month")


@dataclass(frozen=True)
class Window:
    """One period: ``[start, end)`` in unix seconds, and its label (``day:2026-12-03``)."""

    period: str
    start: float
    end: float
    label: str


def zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise InvalidPayload(f"unknown time zone {name!r}") from None


def window(now: float, period: str, tz: str | None = None) -> Window:
    """The ``period`` window of time zone ``tz`` (default UTC) that holds ``now``."""
    if period not in PERIODS:
        raise InvalidPayload(f"period must be one of {', '.join(PERIODS)}, got {period!r}")
    z = zone(tz)
    today = datetime.fromtimestamp(now, z).date()
    if period == "day":
        first, after = today, today + timedelta(days=1)
    elif period == "week":
        first = today - timedelta(days=today.weekday())
        after = first + timedelta(days=7)
    else:
        first = today.replace(day=1)
        after = (first + timedelta(days=32)).replace(day=1)
    return Window(period, _midnight(first, z), _midnight(after, z),
                  f"{period}:{first.isoformat()}")


def _midnight(day: date, z: ZoneInfo) -> float:
    return datetime.combine(day, time(0), tzinfo=z).timestamp()


def local_time(seconds: float, tz: str | None = None) -> str:
    """``seconds`` as wall-clock time in ``tz`` for people: ``2026-03-11 00:00 Europe/Berlin``."""
    return f"{datetime.fromtimestamp(seconds, zone(tz)):%Y-%m-%d %H:%M} {tz or 'UTC'}"
