"""Schedule ticks: which instants a cron expression names in a time zone, and which of them a
scheduler step enqueues. Pure logic, no I/O: the store calls it inside its transaction with
the store's clock.

A tick is a wall-clock time in the schedule's zone, named by a five-field cron expression
(or an alias such as ``@daily``), turned into an instant by ``zoneinfo``'s default (PEP 495,
``fold=0``):

* a wall time that occurs twice (the clocks go back) runs once, at its first occurrence;
* a wall time that does not exist (the clocks go forward) runs as if the clocks had not moved
  yet: 02:30 on a spring-forward night in Europe/Berlin runs at 03:30 CEST, one hour after
  01:30 CET. Two wall times that fall on one instant this way are one tick.

Times are unix seconds (floats); ticks fall on whole seconds. ``next_after(t)`` is the first
tick strictly after ``t``, so a tick at exactly ``now`` is due. ``plan`` says, for a step at
``now`` whose schedule was next due at ``due``, which ticks to enqueue under each catch-up
mode and when the schedule is next due.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, UTC
from collections.abc import Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import importlib
from types import ModuleType

from ..errors import InvalidArgument

CATCH_UP_MODES = ("latest", "all", "none")
"""latest: of the ticks missed, enqueue only the most recent; all: every missed tick (at most
``MAX_TICKS_PER_STEP`` per step, the rest in the steps after); none: skip missed ticks."""

MAX_TICKS_PER_STEP = 1000
"""With ``catch_up="all"``, a step enqueues at most this many ticks of one schedule (the
oldest first); the schedule stays due and the next step goes on from there."""

ON_TIME_S = 60.0
"""With ``catch_up="none"``, the one due tick is still run if the step that finds it is at most
this many seconds late (a scheduler polls, so it is always a little late); later, or with a
later tick also due (the schedulers were down for a whole interval), every due tick counts as
missed."""

_SLACK = timedelta(hours=3)
"""More than any UTC offset change (DST or a zone's change of offset): the window in which
wall-clock order and instant order may disagree."""

_UTC = UTC
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,119}")
_ALIASES = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                      "@hourly"})


def check_name(name: object) -> str:
    """A schedule's name: 1 to 120 of ``A-Z a-z 0-9 . _ : -``, starting with a letter or
    digit. The name is part of each tick's idempotency key and of its REST path, so it is
    held to what both carry without escaping."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidArgument(f"schedule name must be 1 to 120 characters of A-Z a-z 0-9 . _ : - "
                              f"starting with a letter or digit, got {name!r:.80}",
                              argument="name")
    return name


def check_catch_up(mode: object) -> str:
    if mode not in CATCH_UP_MODES:
        raise InvalidArgument(f"catch_up must be one of {', '.join(CATCH_UP_MODES)}, "
                              f"got {mode!r:.40}", argument="catch_up")
    return str(mode)


def zone(name: object) -> ZoneInfo:
    """The IANA time zone ``name`` (``"UTC"``, ``"Europe/Berlin"``), or ``invalid_argument``."""
    if not isinstance(name, str) or not name or len(name) > 64 or "\x00" in name:
        raise InvalidArgument(f"unknown time zone {name!r:.80}", argument="timezone")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError, TypeError):
        raise InvalidArgument(f"unknown time zone {name!r:.80}", argument="timezone") from None


@dataclass(frozen=True)
class Cron:
    """A cron expression in a time zone: the ticks of one schedule."""

    expr: str
    tz: ZoneInfo

    @classmethod
    def parse(cls, expr: object, timezone_name: object = "UTC") -> Cron:
        """Five fields (minute hour day month weekday) or an ``@`` alias; anything else,
        including a seconds field, an unknown zone or an expression that never fires
        (``0 0 30 2 *``), is ``invalid_argument``."""
        tz = zone(timezone_name)
        if not isinstance(expr, str) or len(expr) > 200 or "\x00" in expr:
            raise InvalidArgument(f"invalid cron expression {expr!r:.80}", argument="cron")
        text = " ".join(expr.split())
        fields = text.split(" ")
        if not ((len(fields) == 5 and not text.startswith("@")) or
                (len(fields) == 1 and text.lower() in _ALIASES)):
            raise InvalidArgument(f"invalid cron expression {expr!r:.80}: five fields (minute "
                                  "hour day month weekday) or an alias such as @daily",
                                  argument="cron")
        try:
            valid = _cron().croniter.is_valid(text)
        except Exception:  # noqa: BLE001 - any text the parser chokes on is simply invalid
            valid = False
        if not valid:
            raise InvalidArgument(f"invalid cron expression {expr!r:.80}", argument="cron")
        try:
            _cron().croniter(text, datetime(2000, 1, 1)).get_next(datetime)
        except (_cron().CroniterError, ValueError, OverflowError):
            raise InvalidArgument(f"cron expression {expr!r:.80} never fires",
                                  argument="cron") from None
        return cls(text, tz)

    def _instant(self, wall: datetime) -> float:
        return wall.replace(tzinfo=self.tz).timestamp()

    def _wall(self, t: float) -> datetime:
        return datetime.fromtimestamp(t, self.tz).replace(tzinfo=None)

    def _steady(self, t: float) -> bool:
        """No change of UTC offset within ``_SLACK`` of ``t`` (the offsets at both ends agree;
        zones change offset months apart, never twice in a few hours). Near ``t`` wall-clock
        order is then instant order, so the next wall time is the next tick."""
        s = _SLACK.total_seconds()
        return (datetime.fromtimestamp(t - s, self.tz).utcoffset()
                == datetime.fromtimestamp(t + s, self.tz).utcoffset())

    def next_after(self, t: float) -> float:
        """The first tick strictly after ``t``. Away from a clock change (``_steady`` at ``t``
        and at the answer) it is the next wall time; near one, ``_next_after_walk``."""
        if self._steady(t):
            it = _cron().croniter(self.expr, self._wall(t))
            while True:
                at = self._instant(it.get_next(datetime))
                if at > t:
                    break
            if self._steady(at):
                return at
        return self._next_after_walk(t)

    def _next_after_walk(self, t: float) -> float:
        """``next_after`` anywhere: wall times are walked in order from a little before
        ``t``'s wall time; near a clock change wall order and instant order may differ, so
        walking goes on until no later wall time can map to an earlier instant."""
        it = _cron().croniter(self.expr, self._wall(t) - _SLACK)
        best: float | None = None
        limit: datetime | None = None
        while True:
            wall = it.get_next(datetime)
            if limit is not None and wall > limit:
                return best  # type: ignore[return-value]
            at = self._instant(wall)
            if at > t and (best is None or at < best):
                best, limit = at, wall + _SLACK

    def last_at_or_before(self, t: float) -> float | None:
        """The latest tick at or before ``t`` (None only before year 1 or so)."""
        if self._steady(t):
            it = _cron().croniter(self.expr, self._wall(t) + timedelta(seconds=1))
            try:
                while True:
                    at = self._instant(it.get_prev(datetime))
                    if at <= t:
                        break
            except _cron().CroniterError:
                return None
            if self._steady(at):
                return at
        return self._last_at_or_before_walk(t)

    def _last_at_or_before_walk(self, t: float) -> float | None:
        it = _cron().croniter(self.expr, self._wall(t) + _SLACK + timedelta(seconds=1))
        best: float | None = None
        limit: datetime | None = None
        while True:
            try:
                wall = it.get_prev(datetime)
            except _cron().CroniterError:
                return best
            if limit is not None and wall < limit:
                return best
            at = self._instant(wall)
            if at <= t and (best is None or at > best):
                best, limit = at, wall - _SLACK

    def ticks(self, after: float, until: float, *, limit: int) -> list[float]:
        """Ticks in ``(after, until]``, oldest first, at most ``limit``."""
        out: list[float] = []
        t = after
        while len(out) < limit:
            t = self.next_after(t)
            if t > until:
                break
            out.append(t)
        return out


@dataclass(frozen=True)
class Plan:
    """What one step does for one due schedule: enqueue ``ticks`` (oldest first, one job
    each), then the schedule is next due at ``next_run_at``."""

    ticks: Sequence[float]
    next_run_at: float


def plan(cron: Cron, catch_up: str, due: float, now: float, *,
         max_ticks: int = MAX_TICKS_PER_STEP) -> Plan:
    """The step at ``now`` for a schedule next due at ``due`` (a tick, ``due <= now``).

    The due ticks are those in ``[due, now]``. ``all`` enqueues them oldest first, at most
    ``max_ticks``: if more remain, the schedule stays due at the first one left. ``latest``
    enqueues the most recent. ``none`` enqueues ``due`` only if it is the one due tick and on
    time (``now - due <= ON_TIME_S``), else nothing. In every case but a cut-short ``all`` the
    schedule is next due at the first tick after ``now``.
    """
    check_catch_up(catch_up)
    if due > now:
        return Plan((), due)
    if catch_up == "all":
        ticks = [due, *cron.ticks(due, now, limit=max_ticks)][:max(1, max_ticks)]
        rest = cron.next_after(ticks[-1])
        return Plan(ticks, rest if rest <= now else cron.next_after(now))
    latest = cron.last_at_or_before(now)
    if latest is None or latest < due:  # a tick ``due <= now`` bounds it; kept safe
        latest = due
    following = cron.next_after(now)
    if catch_up == "none" and (latest != due or now - due > ON_TIME_S):
        return Plan((), following)
    return Plan((latest,), following)


def tick_key(name: str, tick: float) -> str:
    """The idempotency key of a schedule's job for one tick: its name and the tick as UTC,
    e.g. ``schedule:nightly-eval:2026-12-03T02:00:00Z``. Every scheduler derives the same key
    for the same tick, so the unique (project, key) index lets exactly one job in."""
    stamp = datetime.fromtimestamp(tick, _UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"schedule:{name}:{stamp}"


def _cron() -> ModuleType:
    """croniter, imported when a schedule is first read: a CLI command that reads none (most
    of them) does not pay for it and dateutil at start-up."""
    return importlib.import_module("croniter")
