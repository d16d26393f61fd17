"""``/api/v1/projects/{project}/budget``: a project's shared limits, read and set.

Reading is scoped like jobs: a project outside a project token's scope answers 404, exactly as
a job of another project does. Setting needs an admin token (403 otherwise): a project budget
is the ceiling on what every job of the project, and so every token of it, may spend; a
project token may still raise its own jobs' budgets (``PATCH /jobs/{id}/budget``), which
the project's limits keep bounding.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query

from ..app import Tether
from ..wire.numbers import INT63
from ..wire.budgets import ProjectBudgetIn, ProjectBudgetOut
from ..wire.problems import Problem
from ..wire.thresholds import CrossingOut, CrossingsOut
from .auth import Principal, admin, principal
from .openapi import problem_responses
from .routes_jobs import tether

router = APIRouter(prefix="/projects", tags=["budgets"])

ProjectName = Annotated[str, Path(min_length=1, max_length=200, description="the project")]


def readable(project: str, who: Principal) -> str:
    if not who.allows(project):
        raise Problem(404, "not_found", f"project {project!r} not found")
    return project


@router.get("/{project}/budget", response_model=ProjectBudgetOut,
            responses=problem_responses(404), summary="A project's budget and its use",
            description="Limits, use to date and calls in flight; for a periodic budget also "
                        "the current period's use and bounds (when it resets).")
def get_budget(project: ProjectName, who: Principal = Depends(principal),
               app: Tether = Depends(tether)) -> ProjectBudgetOut:
    return ProjectBudgetOut.of(project, app.project_budget(readable(project, who)))


@router.put("/{project}/budget", response_model=ProjectBudgetOut,
            responses=problem_responses(403, 413), summary="Set a project's budget (admin)",
            description="Replaces the project's limits with the body's: a limit left out is "
                        "unlimited. Jobs of the project paused by its budget resume unless "
                        "`resume` is false.")
def put_budget(project: ProjectName, body: ProjectBudgetIn, _: Principal = Depends(admin),
               app: Tether = Depends(tether)) -> ProjectBudgetOut:
    status = app.set_project_budget(project, body.to_facade(), resume=body.resume, replace=True)
    return ProjectBudgetOut.of(project, status)


@router.get("/{project}/budget/crossings", response_model=CrossingsOut,
            responses=problem_responses(404), summary="Budget thresholds crossed",
            description="The thresholds crossed in the project, newest first: its own "
                        "budget's and its jobs' (each also a `budget_threshold` event of the "
                        "job whose call crossed it). See docs/alerts.md.")
def get_crossings(
    project: ProjectName, who: Principal = Depends(principal), app: Tether = Depends(tether),
    scope: Annotated[Literal["job", "project"] | None, Query(
        description="only the project's budget, or only jobs' budgets")] = None,
    job_id: Annotated[int | None, Query(ge=1, le=INT63,
                                        description="only this job's budget")] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="most to return")] = 100,
) -> CrossingsOut:
    found = app.budget_crossings(readable(project, who), job_id=job_id, scope=scope,
                                 limit=limit)
    return CrossingsOut(crossings=[CrossingOut.of(c) for c in found])
