"""Injectable time.

Every piece of timing logic (leases, backoff, retry_wait, heartbeats) asks a ``Clock``.
Production uses the database's clock where it matters (the store passes ``now=None`` and lets
SQL decide); tests pass a ``FakeClock`` and move it, never sleeping.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, UTC
from typing import overload


def utc(ts: float) -> datetime:
    """Unix seconds to an aware UTC datetime."""
    return datetime.fromtimestamp(ts, tz=UTC)


FIRST_TS = datetime(1, 1, 1, tzinfo=UTC).timestamp()
LAST_TS = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


@overload
def to_ts(value: datetime | float) -> float: ...
@overload
def to_ts(value: None) -> None: ...
def to_ts(value: datetime | float | None) -> float | None:
    """An aware datetime (naive means UTC) or unix seconds to unix seconds. ValueError for a
    time that no ``datetime`` holds (not finite, before year 1 or after 9999): PostgreSQL would
    refuse some of those, and no store could give any of them back as a ``datetime``."""
    if value is None:
        return None
    try:
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            seconds = (value.replace(tzinfo=UTC) if value.tzinfo is None else value).timestamp()
    except OverflowError:
        raise ValueError(f"{value!r} is outside the years 1 to 9999") from None
    if not FIRST_TS <= seconds <= LAST_TS:  # NaN fails this too
        raise ValueError(f"{value!r} is outside the years 1 to 9999")
    return seconds


class Clock:
    """The real wall clock (for 'now') and monotonic clock (for intervals)."""

    fake = False

    def time(self) -> float:
        return time.time()

    def now(self) -> datetime:
        return utc(self.time())

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock(Clock):
    """A clock that only moves when told to; ``sleep`` advances it instead of waiting."""

    fake = True

    def __init__(self, start: float | datetime = 1_767_225_600.0) -> None:  # 2026-01-01Z
        self._t = to_ts(start) or 0.0
        self._lock = threading.Lock()

    def time(self) -> float:
        with self._lock:
            return self._t

    def monotonic(self) -> float:
        return self.time()

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._t += seconds
            return self._t

    def set(self, when: float | datetime) -> None:
        with self._lock:
            self._t = to_ts(when) or 0.0

    def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))


class OffsetClock(Clock):
    """The real clock shifted by a fixed offset: a worker whose clock is wrong (for tests)."""

    def __init__(self, offset_s: float) -> None:
        self.offset_s = offset_s

    def time(self) -> float:
        return time.time() + self.offset_s


SYSTEM_CLOCK = Clock()
