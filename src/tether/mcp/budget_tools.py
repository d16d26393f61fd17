"""Project budgets over MCP: the REST API's ``GET``/``PUT /projects/{project}/budget``.

Reading is scoped like jobs (another project is ``not_found``); setting needs an admin token
(``forbidden`` otherwise), as the queue tools do: a project's budget bounds every token of it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from ..app import Tether
from ..wire.budgets import ProjectBudgetOut
from ..wire.problems import Problem
from ..wire.thresholds import CrossingOut, CrossingsOut
from .arguments import Flag, JobId, Name, PrincipalFor, ProjectLimits
from .strict import strict_tool

Project = Annotated[Name, Field(description="the project")]


def budget_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The project budget tools, bound to ``app``."""

    def get_project_budget(ctx: Context, project: Project) -> ProjectBudgetOut:
        if not principal_for(ctx).allows(project):
            raise Problem(404, "not_found", f"project {project!r} not found")
        return ProjectBudgetOut.of(project, app.project_budget(project))

    def set_project_budget(
        ctx: Context, project: Project,
        budget: Annotated[ProjectLimits, Field(description=(
            "the project's limits, replacing the current ones: a limit left out is unlimited; "
            "period day/week/month makes them count per period of timezone"))],
        resume: Annotated[Flag, Field(description=(
            "resume the project's jobs paused by its budget (default true)"))] = True,
    ) -> ProjectBudgetOut:
        if not principal_for(ctx).admin:
            raise Problem(403, "forbidden", "a project's budget bounds every token of it: "
                          "setting it needs an admin token")
        status = app.set_project_budget(project, budget.to_facade(), resume=resume,
                                        replace=True)
        return ProjectBudgetOut.of(project, status)

    def budget_crossings(
        ctx: Context, project: Project,
        scope: Annotated[Literal["job", "project"] | None, Field(description=(
            "only the project's own budget, or only its jobs' budgets"))] = None,
        job_id: Annotated[JobId | None, Field(description="only this job's budget")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="most to return")] = 100,
    ) -> CrossingsOut:
        if not principal_for(ctx).allows(project):
            raise Problem(404, "not_found", f"project {project!r} not found")
        found = app.budget_crossings(project, job_id=job_id, scope=scope, limit=limit)
        return CrossingsOut(crossings=[CrossingOut.of(c) for c in found])

    return [
        strict_tool(budget_crossings, "tether_budget_crossings", (
            "Budget thresholds crossed in a project, newest first: its own budget's and its "
            "jobs'. A threshold (a fraction of a cost, calls or tokens limit) fires once per "
            "budget and period, when settled use reaches it."), read_only=True),
        strict_tool(get_project_budget, "tether_get_project_budget", (
            "A project's budget: limits, use to date, calls in flight; for a periodic budget "
            "(per day, week or month) also this period's use, start and end (when it resets "
            "and jobs paused by it with period_budget_exhausted resume)."), read_only=True),
        strict_tool(set_project_budget, "tether_set_project_budget", (
            "Set a project's budget, replacing its limits (admin)."), idempotent=True),
    ]
