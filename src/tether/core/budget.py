"""Budgets: limits, accumulators and the pure check that a reservation fits (docs/design.md,
"Budgets, prices, the ledger").

Money is ``Decimal`` USD everywhere; limits also accept ``str``, ``int`` or ``float`` and are
converted through ``str`` so ``0.1`` stays ``Decimal("0.1")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from typing import Any

from ..errors import InvalidPayload

LIMIT_FIELDS = ("max_cost_usd", "max_calls", "max_input_tokens", "max_output_tokens",
                "max_duration_s", "max_examples")
PERIOD_FIELDS = ("period", "timezone", "period_resume")
"""A project budget's limits may count per calendar period (``core/periods.py``)."""
COUNTER_FIELDS = ("spent_usd", "reserved_usd", "calls", "reserved_calls", "input_tokens",
                  "output_tokens", "reserved_input_tokens", "reserved_output_tokens", "examples")


def to_decimal(value: Any, what: str = "amount") -> Decimal:
    if isinstance(value, Decimal):
        out = value
    elif isinstance(value, bool) or value is None:
        raise InvalidPayload(f"{what} must be a number, got {value!r}")
    else:
        try:
            out = Decimal(str(value))
        except Exception:  # noqa: BLE001 - whatever fails to parse is the caller's error
            raise InvalidPayload(f"{what} must be a number, got {value!r}") from None
    if not out.is_finite() or out < 0:
        raise InvalidPayload(f"{what} must be a finite non-negative number, got {value!r}")
    return out


def _to_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise InvalidPayload(f"{what} must be a whole number, got {value!r}")
    try:
        out = int(Decimal(str(value)))
    except Exception:  # noqa: BLE001 - whatever fails to parse is the caller's error
        raise InvalidPayload(f"{what} must be a whole number, got {value!r}") from None
    if out < 0:
        raise InvalidPayload(f"{what} must not be negative, got {value!r}")
    return out


@dataclass(frozen=True)
class Budget:
    """Limits for a job or a project. ``None`` means unlimited."""

    max_cost_usd: Decimal | None = None
    max_calls: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_duration_s: float | None = None
    max_examples: int | None = None
    period: str | None = None
    """``day``, ``week`` or ``month``: the limits count what is spent in the current period of
    ``timezone`` (default UTC), not in all time. Project budgets only."""
    timezone: str | None = None
    period_resume: bool | None = None
    """A job paused by a period limit resumes when the period rolls over (default true)."""

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None:
            object.__setattr__(self, "max_cost_usd", to_decimal(self.max_cost_usd, "max_cost_usd"))
        for name in ("max_calls", "max_input_tokens", "max_output_tokens", "max_examples"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _to_int(value, name))
        if self.max_duration_s is not None:
            object.__setattr__(self, "max_duration_s",
                               float(to_decimal(self.max_duration_s, "max_duration_s")))
        if self.period is not None or self.timezone is not None:
            from .periods import PERIODS, zone
            if self.period is None:
                raise InvalidPayload(f"period: required with a timezone, one of "
                                     f"{', '.join(PERIODS)}", argument="period")
            if self.period not in PERIODS:
                raise InvalidPayload(f"period: must be one of {', '.join(PERIODS)}, "
                                     f"got {self.period!r}", argument="period")
            if self.timezone is not None:
                try:
                    zone(self.timezone)
                except InvalidPayload:
                    raise InvalidPayload(f"timezone: unknown time zone {self.timezone!r:.80}",
                                         argument="timezone") from None
        if self.period_resume is not None and not isinstance(self.period_resume, bool):
            raise InvalidPayload(f"period_resume must be true or false, "
                                 f"got {self.period_resume!r}")

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Budget:
        data = dict(data or {})
        unknown = set(data) - set(LIMIT_FIELDS) - set(PERIOD_FIELDS)
        if unknown:
            raise InvalidPayload(f"unknown budget field(s): {', '.join(sorted(unknown))}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = str(value) if isinstance(value, Decimal) else value
        return out

    def merged(self, changes: Budget | dict[str, Any]) -> Budget:
        """These limits with every limit that ``changes`` sets replaced."""
        new = changes if isinstance(changes, Budget) else Budget.from_dict(changes)
        return replace(self, **{k: v for k, v in vars(new).items() if v is not None})

    @property
    def empty(self) -> bool:
        return not self.to_dict()

    @property
    def resumes_each_period(self) -> bool:
        return self.period is not None and self.period_resume is not False


@dataclass(frozen=True)
class Counters:
    """What a job (or project) has spent and has reserved for calls in flight."""

    spent_usd: Decimal = Decimal(0)
    reserved_usd: Decimal = Decimal(0)
    calls: int = 0
    reserved_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reserved_input_tokens: int = 0
    reserved_output_tokens: int = 0
    examples: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in vars(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Counters:
        data = data or {}
        kw: dict[str, Any] = {}
        for name in COUNTER_FIELDS:
            if name in data and data[name] is not None:
                kw[name] = Decimal(str(data[name])) if name.endswith("_usd") else int(data[name])
        return cls(**kw)


@dataclass(frozen=True)
class BudgetStatus:
    """A job's limits with its accumulators: what ``Job.budget`` carries."""

    limits: Budget = field(default_factory=Budget)
    used: Counters = field(default_factory=Counters)
    period_used: Counters | None = None
    """A periodic project budget: what settled in the current period (``used`` is all time)."""
    period_start: float | None = None
    period_end: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"limits": self.limits.to_dict(), "used": self.used.to_dict()}
        if self.period_used is not None:
            out["period"] = {"period": self.limits.period,
                             "timezone": self.limits.timezone or "UTC",
                             "start": self.period_start, "end": self.period_end,
                             "used": self.period_used.to_dict()}
        return out

    def __getattr__(self, name: str) -> Any:
        if name in LIMIT_FIELDS:
            return getattr(self.limits, name)
        if name in COUNTER_FIELDS:
            return getattr(self.used, name)
        raise AttributeError(name)


@dataclass(frozen=True)
class Reservation:
    """The worst case one call may consume, reserved before it is made."""

    cost_usd: Decimal
    input_tokens: int
    output_tokens: int
    calls: int = 1


def exceeded_limit(limits: Budget, used: Counters, want: Reservation) -> str | None:
    """The first limit that ``want`` would cross, counting spent plus reserved, else ``None``.

    ``max_examples`` is checked here too, before any money is spent: a call reserves room for
    one example, as it reserves its worst-case cost, and so does every call still in flight
    (``reserved_calls``); a call is refused once the examples counted plus those in flight
    leave no room for its own. A job that has produced all the examples it may makes no more
    paid calls, and ``add_examples`` still refuses a count past the limit."""
    checks = (
        ("max_cost_usd", used.spent_usd + used.reserved_usd + want.cost_usd),
        ("max_calls", used.calls + used.reserved_calls + want.calls),
        ("max_input_tokens", used.input_tokens + used.reserved_input_tokens + want.input_tokens),
        ("max_output_tokens",
         used.output_tokens + used.reserved_output_tokens + want.output_tokens),
        ("max_examples", used.examples + used.reserved_calls + want.calls),
    )
    for name, total in checks:
        limit = getattr(limits, name)
        if limit is not None and total > limit:
            return name
    return None
