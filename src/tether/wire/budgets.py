"""The wire shape of a project's budget (``GET``/``PUT /api/v1/projects/{project}/budget``,
MCP ``tether_get_project_budget`` / ``tether_set_project_budget``).

A periodic budget (``period`` day, week or month, in ``timezone``) limits what the project's
calls spend within the current period; the answer then also says what the period limits are
checked against now (``period_used``) and the period's bounds. Money is decimal text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field, StrictBool

from ..core.budget import BudgetStatus
from ..store.accounting import in_period
from .models import BudgetLimits, BudgetLimitsOut, BudgetUsed

Period = Literal["day", "week", "month"]
"""``core.periods.PERIODS``, as the schema's enum (a test holds them equal)."""


class ProjectLimitsIn(BudgetLimits):
    """A project's limits, replaced as a whole: a limit left out is unlimited, and without a
    ``period`` the limits count all time."""

    period: Period | None = Field(None, description="count the limits per calendar day, "
                                                    "ISO week (from Monday) or month")
    timezone: str | None = Field(None, min_length=1, max_length=64, description=(
        "IANA time zone of the period, e.g. Europe/Berlin; default UTC"))
    period_resume: StrictBool | None = Field(None, description=(
        "a job paused by a period limit resumes when the period rolls over (default true)"))


class ProjectBudgetIn(ProjectLimitsIn):
    """``PUT /projects/{project}/budget``: the project's new limits, and whether its jobs
    paused by its budget resume now."""

    resume: StrictBool = Field(True, description="resume the project's jobs paused by its "
                                                 "budget now; false only sets the limits")

    def to_facade(self) -> dict[str, object]:
        out = super().to_facade()
        out.pop("resume", None)
        return out


class ProjectLimitsOut(BudgetLimitsOut):
    period: Period | None = None
    timezone: str | None = Field(None, description="the period's time zone (periodic only)")
    period_resume: bool | None = Field(None, description="whether jobs paused by a period "
                                                         "limit resume when it rolls over")


class ProjectBudgetOut(BaseModel):
    """A project's limits and what its jobs have used (all time, and for a periodic budget in
    the current period)."""

    project: str
    limits: ProjectLimitsOut
    used: BudgetUsed = Field(description="all time; reserved_* are the calls in flight now")
    period_used: BudgetUsed | None = Field(None, description=(
        "periodic budget: what its limits are checked against now, the use settled in the "
        "current period plus every call of the project in flight"))
    period_start: datetime | None = Field(None, description="the current period's start")
    period_end: datetime | None = Field(None, description=(
        "the current period's end: its use starts again from zero, and jobs paused by it "
        "(error_code period_budget_exhausted, run_after = this time) resume"))

    @classmethod
    def of(cls, project: str, status: BudgetStatus) -> ProjectBudgetOut:
        limits = status.limits
        periodic = limits.period is not None
        out = {k: v for k, v in limits.to_dict().items() if k in ProjectLimitsOut.model_fields}
        if periodic:
            out.update(timezone=limits.timezone or "UTC",
                       period_resume=limits.resumes_each_period)
        period_used = None
        if status.period_used is not None:
            period_used = BudgetUsed(**in_period(status.used, status.period_used).to_dict())
        return cls(project=project, limits=ProjectLimitsOut(**out),
                   used=BudgetUsed(**status.used.to_dict()), period_used=period_used,
                   period_start=_at(status.period_start), period_end=_at(status.period_end))


def _at(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)
