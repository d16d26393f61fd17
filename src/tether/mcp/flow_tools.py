"""Flow control over MCP: pause a job type, set and read concurrency limits (admin tokens
only, else ``forbidden``), as in the REST API's ``/types`` and ``/limits``."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel, Field

from ..app import Tether
from ..wire.flow import LimitList, LimitOut, Scope, TypeList, TypeOut, UsageOut
from ..wire.problems import Problem
from .arguments import Name, PrincipalFor
from .strict import strict_tool

TypeName = Annotated[Name, Field(description="the job type's name")]
LimitName = Annotated[Name, Field(description="the queue's or job type's name")]
ScopeArg = Annotated[Scope, Field(description="what the limit is on: a queue or a job type")]
Count = Annotated[int | None, Field(ge=1, le=1_000_000)]
PerKey = Annotated[Count, Field(description="at most this many running jobs per key")]
Total = Annotated[Count, Field(description="at most this many running jobs in all")]


class Cleared(BaseModel):
    cleared: bool = Field(description="false: it had no limit")


def flow_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The job type and concurrency limit tools, bound to ``app``."""

    def admin(ctx: Context) -> None:
        if not principal_for(ctx).admin:
            raise Problem(403, "forbidden", "job types and limits span every project: this "
                          "needs an admin token")

    def list_types(ctx: Context) -> TypeList:
        admin(ctx)
        return TypeList(items=[TypeOut.of(t) for t in app.job_types()])

    def pause_type(ctx: Context, name: TypeName) -> TypeOut:
        admin(ctx)
        return TypeOut.of(app.pause_type(name))

    def resume_type(ctx: Context, name: TypeName) -> TypeOut:
        admin(ctx)
        return TypeOut.of(app.resume_type(name))

    def list_limits(ctx: Context) -> LimitList:
        admin(ctx)
        return LimitList(items=[LimitOut.of(x) for x in app.flow_limits()],
                         usage=[UsageOut.of(u) for u in app.flow_usage()])

    def set_limit(ctx: Context, scope: ScopeArg, name: LimitName, per_key: PerKey = None,
                  total: Total = None,
                  key: Annotated[str | None, Field(
                      min_length=1, max_length=100,
                      description="the payload field that is the key (default: project)")]
                  = None) -> LimitOut:
        admin(ctx)
        return LimitOut.of(app.set_flow_limit(scope, name, per_key=per_key, total=total,
                                              key=key))

    def clear_limit(ctx: Context, scope: ScopeArg, name: LimitName) -> Cleared:
        admin(ctx)
        return Cleared(cleared=app.clear_flow_limit(scope, name))

    return [
        strict_tool(list_types, "tether_list_types", (
            "Job types with their status (paused or not) and job counts by state (admin)."),
            read_only=True),
        strict_tool(pause_type, "tether_pause_type", (
            "Pause a job type: workers stop claiming its jobs; running jobs go on (admin)."),
            idempotent=True),
        strict_tool(resume_type, "tether_resume_type", (
            "Resume a paused job type (admin)."), idempotent=True),
        strict_tool(list_limits, "tether_list_limits", (
            "Concurrency limits of queues and job types, with running / limit in all and "
            "per key (admin)."), read_only=True),
        strict_tool(set_limit, "tether_set_limit", (
            "Set (replace) a queue's or job type's concurrency limit: at most per_key running "
            "jobs per key (the project, or the payload field named by key) and at most total "
            "in all (admin)."), idempotent=True),
        strict_tool(clear_limit, "tether_clear_limit", (
            "Remove a queue's or job type's concurrency limit (admin)."), idempotent=True),
    ]
