"""Operator tools over MCP: queues and workers (admin tokens only, else ``forbidden``).

Queue counts and workers span every project, so a project token may neither read them nor
pause a queue, as in the REST API's ``/queues`` and ``/workers``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from ..app import Tether
from ..wire.models import QueueList, QueueOut, WorkerList, WorkerOut
from ..wire.principal import Principal
from ..wire.problems import Problem
from .arguments import Name, PrincipalFor
from .strict import strict_tool

QueueName = Annotated[Name, Field(description="the queue's name")]


def admin_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The queue and worker tools, bound to ``app``."""

    def admin(ctx: Context) -> Principal:
        who = principal_for(ctx)
        if not who.admin:
            raise Problem(403, "forbidden", "queues and workers span every project: this needs "
                          "an admin token")
        return who

    def list_queues(ctx: Context) -> QueueList:
        admin(ctx)
        return QueueList(items=[QueueOut.of(q) for q in app.queues()])

    def pause_queue(ctx: Context, name: QueueName) -> QueueOut:
        admin(ctx)
        return QueueOut.of(app.pause_queue(name))

    def resume_queue(ctx: Context, name: QueueName) -> QueueOut:
        admin(ctx)
        return QueueOut.of(app.resume_queue(name))

    def list_workers(ctx: Context) -> WorkerList:
        admin(ctx)
        return WorkerList(items=[WorkerOut.of(w) for w in app.workers()])

    return [
        strict_tool(list_queues, "tether_list_queues", (
            "Queues with their job counts by state (admin)."), read_only=True),
        strict_tool(pause_queue, "tether_pause_queue", (
            "Pause a queue: workers stop claiming from it; running jobs go on (admin)."),
            idempotent=True),
        strict_tool(resume_queue, "tether_resume_queue", (
            "Resume a paused queue (admin)."), idempotent=True),
        strict_tool(list_workers, "tether_list_workers", (
            "Workers that have not stopped, with the leases they hold (admin)."),
            read_only=True),
    ]
