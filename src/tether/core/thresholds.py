"""Budget thresholds: which fractions of a budget's limits one change of its use crossed.

A budget (``core/budget.py: Budget.thresholds``) names fractions of its limits, ``0.8`` being
80 %. Each applies to every cost, calls and tokens limit the budget sets. A threshold is
crossed when the settled use of that limit goes from below ``fraction * limit`` to at or
above it; the store records each crossing once per budget, limit value and period
(``store/thresholds.py``) in the transaction that settled the use.

Only settled use counts (calls paid, and calls whose outcome is unknown, spent in full), not
reservations: a reservation is a call's worst case, often several times what it costs, and it
may be refunded; an alert that fires once must say what was spent, or it would fire for money
never spent and stay silent when the money really goes. The hard limit itself still checks
spent plus reserved (``exceeded_limit``), so a hard budget usually refuses its last call
before settled use reaches 100 %: that refusal pauses the job (``budget_exhausted``), an event
of its own. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from collections.abc import Mapping

from .budget import Budget

METRICS = (("max_cost_usd", "cost", "spent_usd"), ("max_calls", "calls", "calls"),
           ("max_input_tokens", "tokens", "input_tokens"),
           ("max_output_tokens", "tokens", "output_tokens"))
"""(limit, metric, the counter of settled use it is compared with)."""
SETTLED = frozenset(counter for _, _, counter in METRICS)
"""The counters a crossing can come from: a change that moves none of them crosses nothing."""


@dataclass(frozen=True)
class Crossing:
    """One threshold of one limit, crossed: ``used`` is the settled use just after."""

    limit_name: str
    metric: str
    threshold: float
    limit: Decimal | int
    used: Decimal | int

    def event(self, scope: str, project: str, budget_key: str,
              period_start: float | None) -> dict[str, Any]:
        """The ``budget_threshold`` event's data (money as decimal text, as everywhere)."""
        return {"scope": scope, "project": project, "budget": budget_key,
                "metric": self.metric, "limit_name": self.limit_name,
                "threshold": self.threshold, "limit": _wire(self.limit),
                "used": _wire(self.used), "period_start": period_start}


def watched(limits: Budget) -> bool:
    """Does this budget have a threshold on a limit it sets (so its changes must be read)?"""
    return bool(limits.thresholds) and any(
        getattr(limits, name) is not None for name, _, _ in METRICS)


def crossed(limits: Budget, before: Mapping[str, Any],
            after: Mapping[str, Any]) -> list[Crossing]:
    """The thresholds of ``limits`` that settled use crossed going from ``before`` to
    ``after`` (counters by ``COUNTER_FIELDS`` name), lowest first per limit."""
    if not limits.thresholds:
        return []
    out = []
    for name, metric, counter in METRICS:
        limit = getattr(limits, name)
        if limit is None:
            continue
        was, now = before[counter], after[counter]
        if now <= was:
            continue
        for fraction in limits.thresholds:
            level = Decimal(str(fraction)) * limit
            if was < level <= now:
                out.append(Crossing(name, metric, fraction, limit, now))
    return out


def _wire(value: Decimal | int) -> str | int:
    return str(value) if isinstance(value, Decimal) else value
