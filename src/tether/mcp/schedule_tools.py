"""Schedules over MCP: the REST API's ``/schedules`` routes (define, read, pause, resume, delete).

Scoped like jobs: a project token sees and acts on its own projects' schedules only (another
project's schedule is ``schedule_not_found``, like one that does not exist), and may define
or list schedules only in its projects (``forbidden``). A bad cron, zone or name is
``invalid_argument``. As in REST, no schedule tool needs an admin token.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel, Field

from ..app import Tether
from ..wire.problems import Problem
from ..wire.schedules import ScheduleCreate, ScheduleList, ScheduleOut
from .arguments import Limits, Name, PrincipalFor
from .strict import strict_tool


def _about(field: str) -> str:
    """The REST request's description of ``field``, so both interfaces say the same."""
    return ScheduleCreate.model_fields[field].description or field.replace("_", " ")


ScheduleName = Annotated[Name, Field(description="the schedule's name")]


class Scheduled(BaseModel):
    """What ``tether_create_schedule`` answers."""

    created: bool = Field(description="false when a schedule of that name existed and was "
                                      "redefined (REST 200 instead of 201)")
    schedule: ScheduleOut


def schedule_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The schedule tools, bound to ``app``."""

    def create_schedule(
        ctx: Context,
        name: Annotated[Name, Field(description=_about("name"))],
        cron: Annotated[Name, Field(description=_about("cron"))],
        type: Annotated[Name, Field(description=_about("type"))],
        timezone: Annotated[Name, Field(description=_about("timezone"))] = "UTC",
        payload: Annotated[Any, Field(description=_about("payload"))] = None,
        project: Annotated[Name | None, Field(description=(
            "the project; default: the token's only project (unrestricted: 'default')"))] = None,
        queue: Annotated[Name | None, Field(description="default: the job type's queue")] = None,
        budget: Annotated[Limits | None, Field(description=(
            "hard limits for each tick's job; default: the job type's"))] = None,
        catch_up: Annotated[Literal["latest", "all", "none"],
                            Field(description=_about("catch_up"))] = "latest",
    ) -> Scheduled:
        who = principal_for(ctx)
        project = who.write_project(project, where="arguments")
        schedule, created = app.schedule_with_status(
            name, cron=cron, timezone=timezone, type=type, payload=payload, project=project,
            queue=queue, budget=budget.to_facade() if budget is not None else None,
            catch_up=catch_up, projects=who.scope)
        return Scheduled(created=created, schedule=ScheduleOut.of(schedule))

    def list_schedules(
        ctx: Context,
        project: Annotated[Name | None, Field(description="only this project")] = None,
    ) -> ScheduleList:
        who = principal_for(ctx)
        if project is not None and not who.allows(project):
            raise Problem(403, "forbidden", f"this token may not read project {project!r}")
        return ScheduleList(items=[ScheduleOut.of(s) for s in
                                   app.schedules(project=project, projects=who.scope)])

    def get_schedule(ctx: Context, name: ScheduleName) -> ScheduleOut:
        return ScheduleOut.of(app.get_schedule(name, projects=principal_for(ctx).scope))

    def pause_schedule(ctx: Context, name: ScheduleName) -> ScheduleOut:
        return ScheduleOut.of(app.pause_schedule(name, projects=principal_for(ctx).scope))

    def resume_schedule(ctx: Context, name: ScheduleName) -> ScheduleOut:
        return ScheduleOut.of(app.resume_schedule(name, projects=principal_for(ctx).scope))

    def delete_schedule(ctx: Context, name: ScheduleName) -> ScheduleOut:
        return ScheduleOut.of(app.delete_schedule(name, projects=principal_for(ctx).scope))

    return [
        strict_tool(create_schedule, "tether_create_schedule", (
            "Define a cron schedule: each tick of cron in timezone enqueues exactly one job of "
            "type, whatever the number of workers. Defining a name again redefines that "
            "schedule (its next run is kept unless cron or timezone changed). Returns "
            "{created, schedule}; created is false for a redefinition."), idempotent=True),
        strict_tool(list_schedules, "tether_list_schedules", (
            "Schedules by name, with their next run times."), read_only=True),
        strict_tool(get_schedule, "tether_get_schedule", (
            "A schedule: cron, zone, the job each tick enqueues, paused, next and last run, "
            "the last job it enqueued."), read_only=True),
        strict_tool(pause_schedule, "tether_pause_schedule", (
            "Pause a schedule: no tick is enqueued until it is resumed."), idempotent=True),
        strict_tool(resume_schedule, "tether_resume_schedule", (
            "Resume a schedule from the first tick after now (ticks of the pause are "
            "skipped)."), idempotent=True),
        strict_tool(delete_schedule, "tether_delete_schedule", (
            "Delete a schedule; the jobs it already enqueued stay. Returns it as it was."),
            destructive=True, idempotent=True),
    ]
