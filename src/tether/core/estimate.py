"""Cost before running: a job type's estimator says which calls a payload will make; the
price profile turns that into dollars. ``tether submit --dry-run`` and ``app.estimate`` use it,
and submit records it on the job so status can show estimated against actual cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from collections.abc import Iterable

from ..errors import ConfigurationError
from .pricing import PriceProfile


@dataclass(frozen=True)
class CallEstimate:
    """``calls`` calls to one model, each with up to these tokens."""

    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class CostEstimate:
    cost_usd: Decimal
    calls: int
    input_tokens: int
    output_tokens: int
    profile: str
    lines: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"cost_usd": str(self.cost_usd), "calls": self.calls,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "profile": self.profile, "lines": self.lines}


def _lines(raw: Any) -> Iterable[CallEstimate]:
    if isinstance(raw, CallEstimate):
        return [raw]
    out = []
    for item in raw or ():
        if isinstance(item, CallEstimate):
            out.append(item)
        elif isinstance(item, dict):
            out.append(CallEstimate(**item))
        else:
            raise ConfigurationError(f"an estimator must return CallEstimate items, got {item!r}")
    return out


def estimate_cost(raw: Any, profile: PriceProfile) -> CostEstimate:
    total, calls, tin, tout, lines = Decimal(0), 0, 0, 0, []
    for line in _lines(raw):
        price = profile.price(line.provider, line.model)
        cost = line.calls * price.worst_case(line.input_tokens, line.output_tokens)
        total += cost
        calls += line.calls
        tin += line.calls * line.input_tokens
        tout += line.calls * line.output_tokens
        lines.append({"provider": line.provider, "model": line.model, "calls": line.calls,
                      "input_tokens": line.input_tokens, "output_tokens": line.output_tokens,
                      "cost_usd": str(cost)})
    return CostEstimate(total, calls, tin, tout, profile.id, lines)
