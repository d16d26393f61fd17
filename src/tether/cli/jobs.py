"""``tether job ...``: look at jobs and steer them.

Reads (``list``, ``status``, ``events``) print a table or, with ``--json``, the records'
``to_dict()``. Control commands print the job's new state; a transition the job's state does not
allow exits 2 (``invalid_transition``) and an unknown id exits 3 (``job_not_found``).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape

from ..core.states import JobState
from ..app import Tether
from ..records import Event, Job
from . import extras, views
from .options import (
    DatabaseUrl, JobId, Json, MaxCalls, MaxCost, MaxDuration, MaxExamples, MaxInputTokens,
    MaxOutputTokens, open_app, show_help_if_bare,
)
from .output import CliError, emit_json, emit_json_line, out, show, state_text
from .parse import budget_limits

job_app = typer.Typer(help="Inspect, follow and steer jobs.")


@job_app.callback(invoke_without_command=True)
def _group(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


@job_app.command("list")
def list_jobs(
    project: Annotated[Optional[str], typer.Option("--project", help="Only this project.")] = None,
    state: Annotated[Optional[str], typer.Option(
        "--state", metavar="STATE", help="Only jobs in this state: "
        + ", ".join(s.value for s in JobState) + ".")] = None,
    type_: Annotated[Optional[str], typer.Option("--type", help="Only this job type.")] = None,
    queue: Annotated[Optional[str], typer.Option("--queue", help="Only this queue.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000,
                                       help="At most this many jobs.")] = 50,
    before_id: Annotated[Optional[int], typer.Option(
        "--before-id", help="Page back: only jobs with a smaller id.")] = None,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """List jobs, newest first.

    Example: tether job list --project docs --state failed
    """
    if state is not None and state.lower() not in {s.value for s in JobState}:
        raise CliError(f"--state: unknown state {state!r}; use one of "
                       + ", ".join(s.value for s in JobState))
    app = open_app(database_url)
    jobs = app.list(project=project, state=state.lower() if state else None, type=type_,
                    queue=queue, before_id=before_id, limit=limit)
    if as_json:
        emit_json(jobs)
    elif not jobs:
        out().print("no jobs", style="dim")
    else:
        show(views.job_table, jobs)


@job_app.command("status")
def status(job_id: JobId, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Show a job: state, stage, checkpoints, spend vs budget, attempts, last error."""
    app = open_app(database_url)
    if as_json:
        emit_json(extras.status_json(app, job_id))
        return
    job = app.get(job_id)
    show(views.status_view, job, app.attempts(job_id), **extras.status_extras(app, job_id))


@job_app.command("events")
def events(
    job_id: JobId,
    follow: Annotated[bool, typer.Option(
        "--follow", "-F", help="Keep printing new events until the job ends.")] = False,
    after: Annotated[int, typer.Option("--after", min=0, metavar="SEQ",
                                       help="Only events after this sequence number.")] = 0,
    interval: Annotated[float, typer.Option("--interval", min=0.05, hidden=True)] = 1.0,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Show a job's event log, oldest first.

    With --follow, new events print as they happen and the command ends once the job reaches a
    terminal state (succeeded, failed, cancelled); with --json they are JSON Lines. Following
    waits on the store's wake-up (SQLite: any commit; PostgreSQL: LISTEN/NOTIFY), not a loop.
    """
    app = open_app(database_url)
    app.get(job_id)
    if not follow:
        log = _all_events(app, job_id, after)
        if as_json:
            emit_json(log)
        elif not log:
            out().print("no events", style="dim")
        else:
            show(views.events_table, log)
        return
    console = out()
    for event in app.follow(job_id, after=after, poll_s=interval):
        if as_json:
            emit_json_line(event)
        else:
            console.print(views.event_line(event), soft_wrap=True)


def _all_events(app: Tether, job_id: int, after: int) -> list[Event]:
    found = []
    while True:
        page = app.events(job_id, after=after, limit=1000)
        found += page
        if len(page) < 1000:
            return found
        after = page[-1].seq


def _show(job: Job, before: str, as_json: bool) -> None:
    if as_json:
        emit_json(job)
        return
    hint = {
        "cancelling": "it stops at its next safe boundary",
        "pausing": "it pauses at its next safe boundary",
    }.get(str(job.state))
    line = f"job {job.id}: {state_text(before)} → {state_text(job.state)}"
    out().print(line + (f"  [dim]({hint})[/]" if hint else ""))


def _control(action: str, job_id: int, database_url: str | None, as_json: bool,
             **kwargs: object) -> None:
    app = open_app(database_url)
    before = str(app.get(job_id).state)
    job = getattr(app, action)(job_id, **kwargs)
    _show(job, before, as_json)


@job_app.command("cancel")
def cancel(job_id: JobId, reason: Annotated[Optional[str], typer.Option(
        "--reason", help="Recorded on the job and its event.")] = None,
           as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Cancel a job: at once if it is not running, else at its next safe boundary."""
    _control("cancel", job_id, database_url, as_json, reason=reason)


@job_app.command("pause")
def pause(job_id: JobId, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Pause a job, keeping its checkpoints; `job resume` continues it."""
    _control("pause", job_id, database_url, as_json)


@job_app.command("resume")
def resume(job_id: JobId, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Queue a paused job again; it continues from its checkpoints."""
    _control("resume", job_id, database_url, as_json)


@job_app.command("retry")
def retry(job_id: JobId, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Queue a failed job again (tether never retries a failed job on its own)."""
    _control("retry", job_id, database_url, as_json)


@job_app.command("requeue")
def requeue(job_id: JobId, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Queue an interrupted job again; it resumes from its checkpoints."""
    _control("requeue", job_id, database_url, as_json)


@job_app.command("budget")
def budget(
    job_id: JobId,
    max_cost: MaxCost = None,
    max_calls: MaxCalls = None,
    max_input_tokens: MaxInputTokens = None,
    max_output_tokens: MaxOutputTokens = None,
    max_duration: MaxDuration = None,
    max_examples: MaxExamples = None,
    resume: Annotated[bool, typer.Option(
        "--resume/--no-resume",
        help="Let a job paused by budget_exhausted continue under the new limits.")] = True,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Change a job's budget limits; limits not named stay as they were.

    A job paused by budget_exhausted continues under the new limits (unless --no-resume).

    Example: tether job budget 42 --max-cost 5 --max-calls 1000
    """
    limits = budget_limits(max_cost=max_cost, max_calls=max_calls,
                           max_input_tokens=max_input_tokens, max_output_tokens=max_output_tokens,
                           max_duration=max_duration, max_examples=max_examples)
    if not limits:
        raise CliError("name at least one limit, e.g. --max-cost 5 or --max-calls 1000")
    app = open_app(database_url)
    before = str(app.get(job_id).state)
    job = app.set_budget(job_id, limits, resume=resume)
    if as_json:
        emit_json(job)
        return
    moved = f"{state_text(before)} → " if before != str(job.state) else ""
    out().print(f"job {job.id}: {moved}{state_text(job.state)}; spent {escape(views.spend(job))}"
                f", calls {escape(views.calls_text(job))}")
    if job.state == JobState.PAUSED and job.error_code == "budget_exhausted":
        out().print(f"[dim]still paused; continue it with: tether job resume {job.id}[/]")
