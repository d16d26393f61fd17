"""The wire shape of a spend report (``GET /api/v1/spend``, MCP ``tether_spend``).

Money is canonical decimal text, as everywhere on the wire (``"0.00042"``, never an
exponent or a float). Every dimension is present in every row; those the report was not
grouped by are null.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from ..core.spend import DIMENSIONS, SpendReport, SpendRow
from .budgets import ProjectBudgetOut
from .numbers import Money


class SpendTotals(BaseModel):
    calls: int = Field(description="settled provider calls")
    unconfirmed_calls: int = Field(description="calls whose outcome a crash left unknown, "
                                               "counted at their reservation")
    input_tokens: int
    output_tokens: int
    cost_usd: Money = Field(description="what the calls cost (USD, exact)")
    reserved_usd: Money = Field(description="what was reserved for them before each call")

    @classmethod
    def of(cls, row: SpendRow) -> SpendTotals:
        return cls(**row.to_dict(()))


class SpendRowOut(SpendTotals):
    """One group: its dimensions (null when not grouped by) and its totals."""

    project: str | None = None
    provider: str | None = None
    model: str | None = None
    job_type: str | None = None
    stage: str | None = Field(None, description="null also for calls made outside a stage")
    day: str | None = Field(None, description="YYYY-MM-DD in the report's time zone")
    week: str | None = Field(None, description="the Monday that starts the week, YYYY-MM-DD")
    month: str | None = Field(None, description="YYYY-MM")

    @classmethod
    def of(cls, row: SpendRow) -> SpendRowOut:
        return cls(**row.to_dict())


class SpendReportOut(BaseModel):
    by: list[str] = Field(description=f"the grouping, in order; any of {', '.join(DIMENSIONS)}")
    tz: str = Field(description="the time zone of days, weeks and months")
    since: datetime | None = Field(description="calls at or after this time")
    until: datetime | None = Field(description="calls before this time")
    rows: list[SpendRowOut] = Field(description="one per group, ordered by the grouping")
    total: SpendTotals
    budgets: list[ProjectBudgetOut] = Field(description="grouped by project: the budget of "
                                                        "each project in the rows (all time "
                                                        "and, if periodic, this period)")

    @classmethod
    def of(cls, report: SpendReport) -> SpendReportOut:
        budgets = [ProjectBudgetOut.of(project, status)
                   for project, status in report.budgets.items()]
        return cls(by=list(report.by), tz=report.tz, since=report.since, until=report.until,
                   rows=[SpendRowOut.of(r) for r in report.rows],
                   total=SpendTotals.of(report.total), budgets=budgets)
