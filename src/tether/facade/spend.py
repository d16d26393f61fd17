"""``Tether.spend``: where the money went, grouped as the caller asks.

A part of the facade, so every interface (CLI ``tether spend``, REST ``GET /api/v1/spend``,
MCP ``tether_spend``, the dashboard's Spend page) asks the same question the same way and
gets the same numbers: the cost ledger's rows in the window, grouped and summed by the
database, with exact Decimal money. See ``core/spend.py`` for what may be asked.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..clock import utc
from ..core import validate
from ..core.budget import BudgetStatus
from ..core.spend import (
    DEFAULT_BY, SpendQuery, SpendReport, When, parse_by, parse_time, total, zone,
)
from ..errors import InvalidArgument
from ..store.base import SpendTotal
from .host import FacadeHost


class SpendPart(FacadeHost):
    """Spend reports over the cost ledger (a part of ``Tether``)."""

    def spend_totals(self, *, projects: Iterable[str] | None = None) -> list[SpendTotal]:
        """Calls, tokens and spend per provider and model, from the ledger."""
        return self.store.spend_totals(projects)

    def spent_projects(self) -> list[str]:
        """Projects whose calls have spent (from the running totals, not the ledger)."""
        return self.store.spent_projects()

    def spend(self, by: str | Iterable[str] = DEFAULT_BY, *, since: When = None,
              until: When = None, tz: str | None = None,
              projects: Iterable[str] | None = None) -> SpendReport:
        """Totals of the cost ledger grouped by ``by`` (any of project, provider, model,
        job_type, stage, day, week, month, in any order; ``"project,model"`` works too).

        ``since``/``until`` bound the window (``since <= call time < until``): a datetime,
        unix seconds, ISO 8601 text, or a span back from now such as ``"7d"`` or ``"24h"``.
        Days, weeks (from Monday) and months are those of ``tz`` (an IANA zone; default UTC).
        ``projects`` limits the report to those projects (a token's scope). Grouped by
        project, the report also carries each listed project's budget, for burn-down charts.
        Unconfirmed calls (outcome unknown after a crash) count at their reservation.
        """
        names = parse_by(by)
        now = self.clock.time()
        start = parse_time(since, now=now, what="since")
        end = parse_time(until, now=now, what="until")
        if start is not None and end is not None and start > end:
            raise InvalidArgument("since must not be after until", argument="since")
        scope = None
        if projects is not None:
            listed = [projects] if isinstance(projects, str) else projects
            scope = tuple(sorted({validate.name(p, "project") for p in listed}))
        query = SpendQuery(by=names, since=start, until=end, tz=zone(tz), projects=scope)
        rows = self.store.spend(query)
        budgets: dict[str, BudgetStatus] = {}
        if "project" in names:
            for project in sorted({r.project for r in rows if r.project is not None}):
                budgets[project] = self.store.project_budget(project)
        return SpendReport(by=names, since=None if start is None else utc(start),
                           until=None if end is None else utc(end), tz=tz or "UTC",
                           rows=rows, total=total(rows), budgets=budgets)
