"""``/api/v1/spend``: the cost ledger grouped and totalled (``Tether.spend``).

Scoped like every route: a project token's report covers its own projects only, and naming
another project is 403. A bad grouping, time or zone is 422 ``invalid_argument`` naming it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from ..app import Tether
from ..core.spend import DEFAULT_BY, DIMENSIONS
from ..wire.problems import Problem
from ..wire.spend import SpendReportOut
from .auth import Principal, principal
from .openapi import problem_responses
from .routes_jobs import tether

router = APIRouter(tags=["spend"])

WHEN = ("ISO 8601 (UTC unless an offset is given) or a span back from now: 7d, 24h, 1h30m")


@router.get("/spend", response_model=SpendReportOut, responses=problem_responses(403),
            summary="Spend from the cost ledger, grouped (by project, model, day, ...)",
            description="One row per group with calls, tokens and cost (exact decimal text). "
                        "Grouped by project, the answer also carries each project's budget.")
def spend(
    who: Principal = Depends(principal), app: Tether = Depends(tether),
    by: Annotated[str, Query(max_length=200, description=(
        "comma-separated, in order: any of " + ", ".join(DIMENSIONS) + "; empty: one total"))
    ] = ",".join(DEFAULT_BY),
    since: Annotated[str | None, Query(min_length=1, max_length=64,
                                       description="calls at or after: " + WHEN)] = None,
    until: Annotated[str | None, Query(min_length=1, max_length=64,
                                       description="calls before: " + WHEN)] = None,
    tz: Annotated[str | None, Query(min_length=1, max_length=64, description=(
        "IANA time zone of days, weeks and months, e.g. Europe/Paris; default UTC"))] = None,
    project: Annotated[str | None, Query(min_length=1, max_length=200,
                                         description="only this project")] = None,
) -> SpendReportOut:
    scope = who.scope
    if project is not None:
        if not who.allows(project):
            raise Problem(403, "forbidden", f"this token may not read project {project!r}")
        scope = (project,)
    return SpendReportOut.of(app.spend(by, since=since, until=until, tz=tz, projects=scope))
