"""Controlling jobs over MCP: cancel, pause, resume, retry, requeue, budgets, fork, signals.

The REST API's ``POST /jobs/{id}/<action>``, ``PATCH /jobs/{id}/budget`` and
``POST /jobs/{id}/fork``, with the same
scoping (another project's job is ``job_not_found``) and the same ``invalid_transition`` when
the job's state does not allow the action. Each answers the job as it is afterwards.
``tether_signal_job`` is ``POST /jobs/{id}/signals/{name}``; ``tether_make_callback`` and
``tether_list_callbacks`` are ``POST`` and ``GET /jobs/{id}/callbacks`` (the URL is made under
``TETHER_PUBLIC_URL``, which the MCP server needs for it: it has no request address).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from ..app import Tether
from ..records import Job
from ..wire import idempotency
from ..wire.callbacks import CallbackList, CallbackOut
from ..wire.models import ON_CHANGE_HELP, JobOut, OnChange, job_detail
from .arguments import Flag, JobId, Limits, Name, PrincipalFor
from .strict import strict_tool

ACTIONS = {
    "pause": "Pause a job: at once if it is not running, else at its next safe boundary. "
             "Checkpoints are kept.",
    "requeue": "Queue an interrupted job again (a job whose worker was lost and whose type is "
               "not safe to retry); also a paused or failed one. It resumes from checkpoints.",
}


def control_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The control tools, bound to ``app``."""

    def cancel_job(ctx: Context, job_id: JobId,
                   reason: Annotated[str | None, Field(max_length=1000, description=(
                       "why, recorded in the job's event log"))] = None) -> JobOut:
        scope = principal_for(ctx).scope
        return job_detail(app, app.cancel(job_id, reason=reason, projects=scope), scope)

    def set_job_budget(
        ctx: Context, job_id: JobId,
        budget: Annotated[Limits, Field(description=(
            "the limits to change; limits not named stay as they were"))],
        resume: Annotated[Flag, Field(description=(
            "resume the job if it is paused because its budget ran out (default true); "
            "false leaves it paused"))] = True,
    ) -> JobOut:
        scope = principal_for(ctx).scope
        return job_detail(app, app.set_budget(job_id, budget.to_facade(), resume=resume,
                                              projects=scope), scope)

    def retry_job(ctx: Context, job_id: JobId,
                  from_stage: Annotated[Name | None, Field(description=(
                      "run again from this stage: the job's checkpoints from it on and the "
                      "finished calls of those stages are dropped (those calls are paid "
                      "again); default: resume from the last checkpoint"))] = None) -> JobOut:
        scope = principal_for(ctx).scope
        return job_detail(app, app.retry(job_id, from_stage=from_stage, projects=scope), scope)

    def fork_job(
        ctx: Context, job_id: JobId,
        from_stage: Annotated[Name, Field(description=(
            "the first stage the fork runs; the source's finished stages before it are "
            "reused, not run or paid again"))],
        payload: Annotated[Any, Field(description=(
            "the fork's payload (any JSON value); default: the source's"))] = None,
        budget: Annotated[Limits | None, Field(description=(
            "the fork's limits; default: the source's limits"))] = None,
        idempotency_key: Annotated[str | None, Field(description=(
            "1-200 visible ASCII characters; forking again with the same key, source, stage "
            "and configuration returns the fork already made instead of a second one"))] = None,
    ) -> JobOut:
        key = idempotency.parse_key(idempotency_key)
        scope = principal_for(ctx).scope
        return job_detail(app, app.fork(job_id, from_stage=from_stage, payload=payload,
                                        budget=budget.to_facade() if budget is not None else None,
                                        idempotency_key=key, projects=scope), scope)
    def resume_job(ctx: Context, job_id: JobId,
                   on_change: Annotated[OnChange | None, Field(
                       description=ON_CHANGE_HELP)] = None) -> JobOut:
        scope = principal_for(ctx).scope
        return job_detail(app, app.resume(job_id, on_change=on_change, projects=scope), scope)

    def signal_job(
        ctx: Context, job_id: JobId,
        name: Annotated[str, Field(min_length=1, max_length=200, description=(
            "the signal's name, as the job waits for it (waiting_for.signal of "
            "tether_get_job)"))],
        value: Annotated[Any, Field(description=(
            "any JSON value; the job's wait_for_signal returns it (absent: null)"))] = None,
    ) -> JobOut:
        who = principal_for(ctx)
        return job_detail(app, app.signal(job_id, name, value, projects=who.scope), who.scope)

    def make_callback(
        ctx: Context, job_id: JobId,
        expires_in_s: Annotated[float | None, Field(gt=0, le=10 * 365 * 24 * 3600, description=(
            "seconds until the URL expires (default seven days)"))] = None,
    ) -> CallbackOut:
        who = principal_for(ctx)
        return CallbackOut.of(app.issue_callback(job_id, expires_in=expires_in_s,
                                                 issued_by=f"token:{who.id}",
                                                 projects=who.scope))

    def list_callbacks(ctx: Context, job_id: JobId) -> CallbackList:
        scope = principal_for(ctx).scope
        return CallbackList(items=[CallbackOut.of(c)
                                   for c in app.callbacks(job_id, projects=scope)])

    def action(name: str) -> Callable[[Context, int], JobOut]:
        def control(ctx: Context, job_id: JobId) -> JobOut:
            method: Callable[..., Job] = getattr(app, name)
            scope = principal_for(ctx).scope
            return job_detail(app, method(job_id, projects=scope), scope)

        control.__name__ = f"{name}_job"
        return control

    return [
        strict_tool(cancel_job, "tether_cancel_job", (
            "Cancel a job: at once unless it is running, else at its next safe boundary."),
            destructive=True, idempotent=True),
        *[strict_tool(action(name), f"tether_{name}_job", text, idempotent=True)
          for name, text in ACTIONS.items()],
        strict_tool(resume_job, "tether_resume_job", (
            "Resume a paused job; it continues from its last checkpoint. A job paused by "
            "journal_mismatch (a call or stage changed since it was recorded: its events say "
            "which and how) takes on_change, reuse or repay."), idempotent=True),
        strict_tool(retry_job, "tether_retry_job", (
            "Queue a failed job again (failed jobs are never retried automatically), "
            "optionally from a stage."), idempotent=True),
        strict_tool(fork_job, "tether_fork_job", (
            "Make a new job from a job's stage on: the source's finished stages before "
            "from_stage and their calls are reused (the fork's ledger lists them at cost 0 "
            "with reused_from), so they are not paid again. Returns the new job; "
            "invalid_argument for a stage the source does not have or never reached.")),
        strict_tool(signal_job, "tether_signal_job", (
            "Send a signal to a job, e.g. a human approval: a job waiting for it (state "
            "waiting, waiting_for.kind signal; its prompt and schema say what it asks) runs on "
            "with the value. A signal sent before the job waits is kept and consumed once. "
            "A finished job answers invalid_transition.")),
        strict_tool(make_callback, "tether_make_callback", (
            "Make a callback URL for a job waiting for a signal: a single-use link that "
            "answers the wait without an API token (a plain POST of the value, or a page with "
            "Approve and Reject), for a person's email or a third-party service. The url is "
            "in this answer only. invalid_transition unless the job waits for a signal.")),
        strict_tool(list_callbacks, "tether_list_callbacks", (
            "A job's callback URLs: who made each, expiry, state (unused, used, expired); "
            "never the URL itself, which only tether_make_callback's answer holds."),
            read_only=True),
        strict_tool(set_job_budget, "tether_set_job_budget", (
            "Change a job's budget limits (raise them to clear a budget_exhausted pause). A "
            "job paused because its budget ran out is resumed unless resume is false."),
            idempotent=True),
    ]
