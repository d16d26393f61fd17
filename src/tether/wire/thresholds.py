"""The wire shape of budget thresholds: the ``thresholds`` and ``soft`` fields every budget
takes (a job's at submission and ``PATCH /jobs/{id}/budget``, a project's ``PUT``, the MCP
budget tools), a crossing as ``GET /projects/{project}/budget/crossings`` and MCP
``tether_budget_crossings`` show it (``core/thresholds.py`` says when one is recorded), and
the data of its ``budget_threshold`` event (``ThresholdEventData``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ..core.budget import MAX_THRESHOLDS
from ..records import BudgetCrossing
from .numbers import JsonNumber

Fraction = Annotated[float, Field(gt=0, le=10), JsonNumber]


class AlertsIn(BaseModel):
    """What a budget tells before it stops anything, and whether it stops."""

    thresholds: list[Fraction] | None = Field(None, max_length=MAX_THRESHOLDS, description=(
        "fractions of each cost, calls and tokens limit (0.8: 80 %) whose crossing by the "
        "settled use appends one budget_threshold event, once per budget (per period); "
        "[] clears them"))
    soft: StrictBool | None = Field(None, description=(
        "true: the limits only alert (thresholds fire), never refuse a call or pause a job"))


class AlertsOut(BaseModel):
    thresholds: list[float] | None = None
    soft: bool | None = None


class CrossingOut(BaseModel):
    """One threshold crossed: also the data of the ``budget_threshold`` event appended to
    ``job_id``, the job whose call crossed it."""

    scope: Literal["job", "project"]
    budget: str = Field(description="the job id (scope job) or the project whose budget it is")
    project: str
    metric: Literal["cost", "calls", "tokens"]
    limit_name: str = Field(description="max_cost_usd, max_calls, max_input_tokens or "
                                        "max_output_tokens")
    threshold: float
    limit: str = Field(description="the limit's value when crossed (decimal text)")
    used: str = Field(description="the settled use just after the crossing (decimal text)")
    period: str | None = Field(None, description="a periodic budget's period, day:2026-12-03")
    period_start: datetime | None = None
    job_id: int
    crossed_at: datetime

    @classmethod
    def of(cls, c: BudgetCrossing) -> CrossingOut:
        start = None if c.period_start is None else datetime.fromtimestamp(c.period_start, UTC)
        return cls(scope=c.scope, budget=c.budget, project=c.project,  # type: ignore[arg-type]
                   metric=c.metric, limit_name=c.limit_name,  # type: ignore[arg-type]
                   threshold=c.threshold, limit=c.limit, used=c.used, period=c.period,
                   period_start=start, job_id=c.job_id, crossed_at=c.crossed_at)


class CrossingsOut(BaseModel):
    crossings: list[CrossingOut]


class ThresholdEventData(BaseModel):
    """The data of a ``budget_threshold`` event, exactly (what a webhook carries of it)."""

    model_config = ConfigDict(extra="forbid")

    scope: Literal["job", "project"]
    project: str
    budget: str = Field(description="the job id (scope job) or the project whose budget it is")
    metric: Literal["cost", "calls", "tokens"]
    limit_name: Literal["max_cost_usd", "max_calls", "max_input_tokens", "max_output_tokens"]
    threshold: float = Field(description="the fraction of the limit, 0.8 for 80 %")
    limit: str | int = Field(description="money as decimal text, counts as numbers")
    used: str | int = Field(description="the settled use just after the crossing")
    period_start: float | None = Field(description=(
        "a periodic budget: its period's start in unix seconds; else null"))
