"""``/api/v1/types`` and ``/api/v1/limits``: pause job types, and set concurrency limits
(admin tokens only, else 403: types and limits span every project, as queues do).

docs/flow-control.md states the rules; a limit takes effect at every worker's next claim.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from ..app import Tether
from ..wire.flow import LimitIn, LimitList, LimitOut, Scope, TypeList, TypeOut, UsageOut
from .auth import Principal, admin
from .openapi import problem_responses
from .routes_jobs import tether

router = APIRouter(tags=["operators"])

Name = Annotated[str, Path(min_length=1, max_length=200, description="queue or job type name")]
TypeName = Annotated[str, Path(min_length=1, max_length=200, description="job type name")]


@router.get("/types", response_model=TypeList, responses=problem_responses(403),
            summary="Job types with their status and job counts by state")
def list_types(_: Principal = Depends(admin), app: Tether = Depends(tether)) -> TypeList:
    return TypeList(items=[TypeOut.of(t) for t in app.job_types()])


@router.post("/types/{name}/pause", response_model=TypeOut,
             responses=problem_responses(403, 422),
             summary="Pause a job type: workers stop claiming its jobs (running jobs go on)",
             description="Only a type registered by this server's app or that has jobs; any "
                         "other name is 422 `unknown_job_type`.")
def pause_type(name: TypeName, _: Principal = Depends(admin),
               app: Tether = Depends(tether)) -> TypeOut:
    return TypeOut.of(app.pause_type(name))


@router.post("/types/{name}/resume", response_model=TypeOut,
             responses=problem_responses(403, 422), summary="Resume a paused job type")
def resume_type(name: TypeName, _: Principal = Depends(admin),
                app: Tether = Depends(tether)) -> TypeOut:
    return TypeOut.of(app.resume_type(name))


@router.get("/limits", response_model=LimitList, responses=problem_responses(403),
            summary="Concurrency limits, with running / limit in all and per key")
def list_limits(_: Principal = Depends(admin), app: Tether = Depends(tether)) -> LimitList:
    return LimitList(items=[LimitOut.of(x) for x in app.flow_limits()],
                     usage=[UsageOut.of(u) for u in app.flow_usage()])


@router.put("/limits/{scope}/{name}", response_model=LimitOut,
            responses=problem_responses(403, 422),
            summary="Set a queue's or job type's concurrency limit (replaces it)",
            description="At most `per_key` running jobs per key (the project, or the payload "
                        "field `key`) and at most `total` in all; at least one of them.")
def put_limit(scope: Scope, name: Name, body: LimitIn, _: Principal = Depends(admin),
              app: Tether = Depends(tether)) -> LimitOut:
    return LimitOut.of(app.set_flow_limit(scope, name, per_key=body.per_key,
                                          total=body.total, key=body.key))


@router.delete("/limits/{scope}/{name}", status_code=204, responses=problem_responses(403),
               summary="Remove a queue's or job type's concurrency limit (204 also when it "
                       "had none: the outcome asked for holds)")
def delete_limit(scope: Scope, name: Name, _: Principal = Depends(admin),
                 app: Tether = Depends(tether)) -> None:
    app.clear_flow_limit(scope, name)
