"""``/api/v1/schedules``: define, read, pause, resume and delete durable schedules.

Scoped by project like the jobs routes: a project token sees and acts on its own projects'
schedules only (another project's schedule answers 404 ``schedule_not_found``), and may define
schedules only in its projects (403). A bad cron, zone or name is 422 ``invalid_argument``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from ..app import Tether
from ..wire.problems import Problem
from ..wire.schedules import ScheduleCreate, ScheduleList, ScheduleOut
from .auth import Principal, principal
from .openapi import problem_responses as _errors
from .routes_jobs import tether

router = APIRouter(prefix="/schedules", tags=["schedules"])

Name = Annotated[str, Path(min_length=1, max_length=200, description="schedule name")]


@router.get("", response_model=ScheduleList, responses=_errors(403),
            summary="Schedules by name, with their next run times")
def list_schedules(who: Principal = Depends(principal), app: Tether = Depends(tether),
                   project: Annotated[str | None, Query(min_length=1, max_length=200)] = None
                   ) -> ScheduleList:
    if project is not None and not who.allows(project):
        raise Problem(403, "forbidden", f"this token may not read project {project!r}")
    return ScheduleList(items=[ScheduleOut.of(s) for s in
                               app.schedules(project=project, projects=who.scope)])


@router.post("", status_code=201, response_model=ScheduleOut,
             responses={200: {"model": ScheduleOut, "description": "an existing schedule, "
                              "redefined"}, **_errors(403)},
             summary="Create a schedule (201), or redefine the one of that name (200)",
             description="Each tick of `cron` in `timezone` enqueues exactly one job, whatever "
                         "the number of workers. A redefinition keeps the next run unless the "
                         "cron or zone changed.")
def create_schedule(body: ScheduleCreate, response: Response,
                    who: Principal = Depends(principal),
                    app: Tether = Depends(tether)) -> ScheduleOut:
    project = who.write_project(body.project, where="body")
    schedule, created = app.schedule_with_status(
        body.name, cron=body.cron, timezone=body.timezone, type=body.type,
        payload=body.payload, project=project, queue=body.queue,
        budget=body.budget.to_facade() if body.budget is not None else None,
        catch_up=body.catch_up, projects=who.scope)
    response.status_code = 201 if created else 200
    if created:
        response.headers["Location"] = f"/api/v1/schedules/{schedule.name}"
    return ScheduleOut.of(schedule)


@router.get("/{name}", response_model=ScheduleOut, responses=_errors(404),
            summary="Get a schedule")
def get_schedule(name: Name, who: Principal = Depends(principal),
                 app: Tether = Depends(tether)) -> ScheduleOut:
    return ScheduleOut.of(app.get_schedule(name, projects=who.scope))


@router.delete("/{name}", response_model=ScheduleOut, responses=_errors(404),
               summary="Delete a schedule (the jobs it enqueued stay); returns it as it was")
def delete_schedule(name: Name, who: Principal = Depends(principal),
                    app: Tether = Depends(tether)) -> ScheduleOut:
    return ScheduleOut.of(app.delete_schedule(name, projects=who.scope))


@router.post("/{name}/pause", response_model=ScheduleOut, responses=_errors(404),
             summary="Pause: no tick is enqueued until resumed")
def pause_schedule(name: Name, who: Principal = Depends(principal),
                   app: Tether = Depends(tether)) -> ScheduleOut:
    return ScheduleOut.of(app.pause_schedule(name, projects=who.scope))


@router.post("/{name}/resume", response_model=ScheduleOut, responses=_errors(404),
             summary="Resume from the first tick after now (ticks of the pause are skipped)")
def resume_schedule(name: Name, who: Principal = Depends(principal),
                    app: Tether = Depends(tether)) -> ScheduleOut:
    return ScheduleOut.of(app.resume_schedule(name, projects=who.scope))
