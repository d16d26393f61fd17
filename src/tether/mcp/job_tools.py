"""Submitting and reading jobs over MCP: the REST API's ``POST /jobs`` and ``GET /jobs...``.

Each tool calls the facade with the caller's project scope, so another project's job answers
``job_not_found`` exactly like a job that does not exist, and answers the REST API's JSON
shapes (``JobOut``, ``EventPage``, ...) as structured content.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel, Field

from ..app import Tether
from ..core.states import JobState
from ..wire import flowkeys as flow, idempotency, pagination
from ..wire.models import (
    AttemptList, AttemptOut, CheckpointList, CheckpointOut, EventOut, EventPage, JobOut, JobPage,
    LedgerEntryOut, LedgerList, job_detail, job_page,
)
from ..wire.numbers import INT32, INT63, JsonNumber, UnixSeconds
from ..wire.signals import BatchList, BatchOut, WaitList, WaitOut
from ..wire.problems import Problem
from .arguments import JobId, Limits, Name, PrincipalFor
from .strict import strict_tool

MAX_LIST = 200
WaitKind = Literal["signal", "timer", "children", "provider_batch"]
MAX_EVENTS = 1000


class Submitted(BaseModel):
    """What ``tether_submit_job`` answers."""

    created: bool = Field(description="false when idempotency_key already named a job with the "
                                      "same configuration, or flow_key a live singleton or a "
                                      "pending debounced job: that job is returned, none is "
                                      "added")
    job: JobOut


def job_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The submit and read tools, bound to ``app``."""

    def submit_job(
        ctx: Context,
        type: Annotated[str, Field(min_length=1, max_length=200,
                                   description="a registered job type")],
        payload: Annotated[Any, Field(description="any JSON value, handed to the job")] = None,
        project: Annotated[Name | None, Field(description=(
            "the project; default: the token's only project (unrestricted: 'default')"))] = None,
        idempotency_key: Annotated[str | None, Field(description=(
            "1-200 visible ASCII characters. Pass one: a retried call with the same key and "
            "configuration returns the existing job instead of starting (and paying for) a "
            "second one"))] = None,
        queue: Annotated[Name | None, Field(description="default: the job type's queue")] = None,
        priority: Annotated[int | None, Field(ge=-INT32, le=INT32, description=(
            "lower runs first; default: the job type's")), JsonNumber] = None,
        max_attempts: Annotated[int | None, Field(ge=1, le=1000, description=(
            "attempts before the job fails; default: the job type's")), JsonNumber] = None,
        run_after: Annotated[datetime | None, Field(description=(
            "ISO 8601 time; the job does not start before it")), UnixSeconds] = None,
        budget: Annotated[Limits | None, Field(description=(
            "hard limits for this job; a call that would cross one is not made and the job "
            "pauses with budget_exhausted"))] = None,
        singleton: Annotated[bool | None, Field(description=flow.SINGLETON_HELP)] = None,
        debounce_s: flow.Window = None,
        flow_key: flow.Key = None,
    ) -> Submitted:
        who = principal_for(ctx)
        key = idempotency.parse_key(idempotency_key)
        project = who.write_project(project, where="arguments", verb="submit to")
        options: dict[str, Any] = {"type": type, "payload": payload, "project": project}
        for name, value in (("queue", queue), ("priority", priority),
                            ("max_attempts", max_attempts), ("run_after", run_after),
                            ("singleton", singleton), ("debounce_s", debounce_s),
                            ("flow_key", flow_key)):
            if value is not None:
                options[name] = value  # noqa: PERF403 - named options, added when given
        if budget is not None:
            options["budget"] = budget.to_facade()
        job, created = idempotency.submit(app, options, key)
        return Submitted(created=created, job=job_detail(app, job, who.scope))

    def get_job(ctx: Context, job_id: JobId) -> JobOut:
        scope = principal_for(ctx).scope
        return job_detail(app, app.get(job_id, projects=scope), scope)

    def list_jobs(
        ctx: Context,
        project: Annotated[Name | None, Field(description="only this project")] = None,
        state: Annotated[JobState | None, Field(description="only jobs in this state")] = None,
        type: Annotated[Name | None, Field(description="only this job type")] = None,
        queue: Annotated[Name | None, Field(description="only this queue")] = None,
        search: Annotated[Name | None, Field(description=(
            "a job id or an idempotency key"))] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST, description="page size"),
                         JsonNumber] = 20,
        cursor: Annotated[str | None, Field(max_length=100, description=(
            "next_cursor of the previous page"))] = None,
        waiting_for: Annotated[WaitKind | None, Field(
            description="only waiting jobs blocked on this kind of wait; signal: the jobs "
                        "waiting for an answer (send it with tether_signal_job)")] = None,
    ) -> JobPage:
        who = principal_for(ctx)
        before = pagination.decode(cursor)
        if project is not None and not who.allows(project):
            raise Problem(403, "forbidden", f"this token may not read project {project!r}")
        if waiting_for is not None:
            page = [] if state not in (None, JobState.WAITING) else app.list_waiting(
                waiting_for, project=project, projects=who.scope, type=type, queue=queue,
                search=search, before_id=before, limit=limit + 1)
        else:
            page = app.list(project=project, projects=who.scope, state=state, type=type,
                            queue=queue, search=search, before_id=before, limit=limit + 1)
        more = len(page) > limit
        page = page[:limit]
        return job_page(app, page, pagination.encode(page[-1].id) if more else None)

    def get_events(
        ctx: Context, job_id: JobId,
        after: Annotated[int, Field(ge=0, le=INT63, description=(
            "return events with seq greater than this (next_after of the last call)")),
            JsonNumber] = 0,
        limit: Annotated[int, Field(ge=1, le=MAX_EVENTS, description="page size"),
                         JsonNumber] = 200,
    ) -> EventPage:
        events = app.events(job_id, after=after, limit=limit + 1,
                            projects=principal_for(ctx).scope)
        more = len(events) > limit
        events = events[:limit]
        return EventPage(items=[EventOut.of(e) for e in events],
                         next_after=events[-1].seq if events else after, has_more=more)

    def get_attempts(ctx: Context, job_id: JobId) -> AttemptList:
        rows = app.attempts(job_id, projects=principal_for(ctx).scope)
        return AttemptList(items=[AttemptOut.of(a) for a in rows])

    def get_ledger(ctx: Context, job_id: JobId) -> LedgerList:
        rows = app.ledger(job_id, projects=principal_for(ctx).scope)
        return LedgerList(items=[LedgerEntryOut(**r.to_dict()) for r in rows])

    def get_waits(ctx: Context, job_id: JobId) -> WaitList:
        rows = app.waits(job_id, projects=principal_for(ctx).scope)
        return WaitList(items=[WaitOut.of(w) for w in rows])

    def get_batches(ctx: Context, job_id: JobId) -> BatchList:
        rows = app.batches(job_id, projects=principal_for(ctx).scope)
        return BatchList(items=[BatchOut(**b.to_dict()) for b in rows])

    def get_checkpoints(ctx: Context, job_id: JobId) -> CheckpointList:
        rows = app.checkpoints(job_id, projects=principal_for(ctx).scope)
        return CheckpointList(items=[CheckpointOut(**r.to_dict()) for r in rows])

    return [
        strict_tool(submit_job, "tether_submit_job", (
            "Submit a job. Returns {created, job}; created is false when idempotency_key "
            "already named a job with the same configuration (that job is returned).")),
        strict_tool(get_job, "tether_get_job", (
            "A job: state, stage, attempts, cost and budget, error, result, lease; a waiting "
            "job also what it waits for (waiting_for: a signal's prompt and schema, a timer, "
            "children done, a provider batch; all its batches: tether_get_batches)."),
            read_only=True),
        strict_tool(list_jobs, "tether_list_jobs", (
            "Jobs newest first; pass next_cursor back as cursor for the next page."),
            read_only=True),
        strict_tool(get_events, "tether_get_events", (
            "A job's event log in seq order, after the given seq. Poll with after=next_after."),
            read_only=True),
        strict_tool(get_attempts, "tether_get_attempts", (
            "One record per attempt: worker, times, outcome, error."), read_only=True),
        strict_tool(get_ledger, "tether_get_ledger", (
            "The job's cost ledger: one row per settled provider call, with tokens, unit "
            "prices and cost (USD as decimal strings)."), read_only=True),
        strict_tool(get_checkpoints, "tether_get_checkpoints", (
            "The job's finished stages; a resumed job skips them."), read_only=True),
        strict_tool(get_waits, "tether_get_waits", (
            "The job's waits, oldest first: signal waits (name, prompt, schema), timers and "
            "gathers, open or done with their outcome and value."), read_only=True),
        strict_tool(get_batches, "tether_get_batches", (
            "The job's provider batches (ctx.batch), oldest first, waiting or settled: the "
            "provider's batch id, items done / failed / in all, USD reserved and settled at "
            "the batch price, and the same usage at the standard price."), read_only=True),
    ]
