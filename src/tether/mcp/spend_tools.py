"""``tether_spend`` over MCP: the REST API's ``GET /spend``, with the same scope and answer.

An agent running long jobs can ask where the money went (by project, model, day, ...) without
reading every job's ledger; a project token's report covers its own projects only.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from ..app import Tether
from ..wire.problems import Problem
from ..wire.spend import SpendReportOut
from .arguments import Name, PrincipalFor
from .strict import strict_tool

Dimension = Literal["project", "provider", "model", "job_type", "stage", "day", "week", "month"]
_DEFAULT_BY: list[Dimension] = ["project", "model", "day"]
"""``core.spend.DEFAULT_BY``, as the tool schema's default (a test holds them equal)."""
When = Annotated[str | None, Field(min_length=1, max_length=64, description=(
    "ISO 8601 (UTC unless an offset is given) or a span back from now: 7d, 24h, 1h30m"))]


def spend_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The spend tool, bound to ``app``."""

    def spend(
        ctx: Context,
        by: Annotated[list[Dimension], Field(max_length=8, description=(
            "group by these, in this order; [] for one grand total"))
        ] = _DEFAULT_BY,
        since: When = None,
        until: When = None,
        tz: Annotated[str | None, Field(min_length=1, max_length=64, description=(
            "IANA time zone of days, weeks and months, e.g. Europe/Paris; default UTC"))] = None,
        project: Annotated[Name | None, Field(description="only this project")] = None,
    ) -> SpendReportOut:
        who = principal_for(ctx)
        scope = who.scope
        if project is not None:
            if not who.allows(project):
                raise Problem(403, "forbidden", f"this token may not read project {project!r}")
            scope = (project,)
        return SpendReportOut.of(app.spend(by, since=since, until=until, tz=tz,
                                           projects=scope))

    return [strict_tool(spend, "tether_spend", (
        "Spend from the cost ledger, grouped by any of project, provider, model, job_type, "
        "stage, day, week, month: calls, tokens and cost (USD as decimal strings) per group, "
        "a total, and each project's budget when grouped by project."), read_only=True)]
