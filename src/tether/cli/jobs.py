"""``tether job ...``: look at jobs and steer them.

Reads (``list``, ``status``, ``events``) print a table or, with ``--json``, the records'
``to_dict()``; ``status`` shows a waiting job's question, and ``signal`` answers it. Control
commands print the job's new state; a transition the job's state does not
allow exits 2 (``invalid_transition``) and an unknown id exits 3 (``job_not_found``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ..core.states import JobState
from ..core.waits import KINDS
from . import extras, views
from .options import (
    DatabaseUrl, JobId, Json, MaxCalls, MaxCost, MaxDuration, MaxExamples, MaxInputTokens,
    MaxOutputTokens, Payload, PayloadFile, Soft, Thresholds, open_app, show_help_if_bare,
)
from .output import CliError, emit_json, emit_json_line, out, show, state_text, usd
from .parse import budget_limits, parse_json, read_payload

if TYPE_CHECKING:
    from ..app import Tether
    from ..records import Event, Job

job_app = typer.Typer(help="Inspect, follow and steer jobs.")


@job_app.callback(invoke_without_command=True)
def _group(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


@job_app.command("list")
def list_jobs(
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
    state: Annotated[str | None, typer.Option(
        "--state", metavar="STATE", help="Only jobs in this state: "
        + ", ".join(s.value for s in JobState) + ".")] = None,
    type_: Annotated[str | None, typer.Option("--type", help="Only this job type.")] = None,
    queue: Annotated[str | None, typer.Option("--queue", help="Only this queue.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000,
                                       help="At most this many jobs.")] = 50,
    before_id: Annotated[int | None, typer.Option(
        "--before-id", help="Page back: only jobs with a smaller id.")] = None,
    waiting_for: Annotated[str | None, typer.Option(
        "--waiting-for", metavar="KIND", help="Only waiting jobs blocked on a wait of this "
        "kind: signal (an answer; send it with `job signal`), timer or children.")] = None,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """List jobs, newest first.

    Example: tether job list --project docs --state failed
    """
    if state is not None and state.lower() not in {s.value for s in JobState}:
        raise CliError(f"--state: unknown state {state!r}; use one of "
                       + ", ".join(s.value for s in JobState))
    if waiting_for is not None and waiting_for not in KINDS:
        raise CliError(f"--waiting-for: unknown kind {waiting_for!r}; use one of "
                       + ", ".join(KINDS))
    app = open_app(database_url)
    if waiting_for is not None:
        jobs = [] if state not in (None, "waiting") else app.list_waiting(
            waiting_for, project=project, type=type_, queue=queue, before_id=before_id,
            limit=limit)
    else:
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
    show(views.status_view, job, app.attempts(job_id), **extras.status_extras(app, job))


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
def cancel(job_id: JobId, reason: Annotated[str | None, typer.Option(
        "--reason", help="Recorded on the job and its event.")] = None,
           as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Cancel a job: at once if it is not running, else at its next safe boundary."""
    _control("cancel", job_id, database_url, as_json, reason=reason)


@job_app.command("pause")
def pause(job_id: JobId, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Pause a job, keeping its checkpoints; `job resume` continues it."""
    _control("pause", job_id, database_url, as_json)


@job_app.command("resume")
def resume(job_id: JobId, on_change: Annotated[str | None, typer.Option(
        "--on-change", metavar="reuse|repay",
        help="For a job paused by journal_mismatch: reuse the recorded answers of the changed "
             "calls and stages, or repay them.")] = None,
           as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Queue a paused job again; it continues from its checkpoints.

    Example: tether job resume 42 --on-change repay
    """
    _control("resume", job_id, database_url, as_json, on_change=on_change)


FromStage = Annotated[str | None, typer.Option(
    "--from-stage", metavar="STAGE",
    help="Run again from this stage: its checkpoint and later ones are dropped.")]


@job_app.command("retry")
def retry(job_id: JobId, from_stage: FromStage = None, as_json: Json = False,
          database_url: DatabaseUrl = None) -> None:
    """Queue a failed job again (tether never retries a failed job on its own).

    With --from-stage, the job's checkpoints from that stage on and the finished calls of
    those stages are dropped first: those stages run again and their calls are paid again.

    Example: tether job retry 42 --from-stage validate
    """
    _control("retry", job_id, database_url, as_json, from_stage=from_stage)


@job_app.command("fork")
def fork(
    job_id: JobId,
    from_stage: Annotated[str, typer.Option(
        "--from-stage", metavar="STAGE",
        help="The first stage the fork runs; the source's stages before it are reused.")],
    payload: Payload = None,
    payload_file: PayloadFile = None,
    max_cost: MaxCost = None,
    max_calls: MaxCalls = None,
    max_input_tokens: MaxInputTokens = None,
    max_output_tokens: MaxOutputTokens = None,
    max_duration: MaxDuration = None,
    max_examples: MaxExamples = None,
    idempotency_key: Annotated[str | None, typer.Option(
        "--idempotency-key", "-k", metavar="KEY",
        help="Forking again with the same key, stage and configuration prints the fork "
             "already made.")] = None,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Make a new job from a job's stage on, reusing the stages before it.

    The source's finished stages before --from-stage and their calls are carried over: they
    are not run, paid or counted again (the fork's ledger shows them as reused from the
    source). The payload defaults to the source's; limits not named are the source's.

    Example: tether job fork 42 --from-stage validate --payload '{"prompt": "stricter"}'
    """
    limits = budget_limits(max_cost=max_cost, max_calls=max_calls,
                           max_input_tokens=max_input_tokens, max_output_tokens=max_output_tokens,
                           max_duration=max_duration, max_examples=max_examples)
    new_payload = (read_payload(payload, payload_file)
                   if payload is not None or payload_file is not None else None)
    app = open_app(database_url)
    source = app.get(job_id)
    job, created = app.fork_with_status(job_id, from_stage=from_stage, payload=new_payload,
                                        budget=source.budget.limits.merged(limits),
                                        idempotency_key=idempotency_key)
    if as_json:
        emit_json(job)
        return
    if not created:
        out().print(f"job {job.id}: already forked with key {escape(str(idempotency_key))}, "
                    f"{state_text(job.state)}")
        return
    data = next((e.data for e in app.events(job.id) if e.kind == "forked_from"), {})
    reused = ", ".join(data.get("stages") or []) or "no stage"
    out().print(f"job {job.id}: forked from job {job_id} at stage {escape(from_stage)}, "
                f"{state_text(job.state)}; reused {escape(reused)} "
                f"({data.get('calls', 0)} calls, {usd(data.get('reused_cost_usd', 0))} "
                f"paid by the source, not again)")


@job_app.command("requeue")
def requeue(job_id: JobId, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Queue an interrupted job again; it resumes from its checkpoints."""
    _control("requeue", job_id, database_url, as_json)


@job_app.command("signal")
def signal(
    job_id: JobId,
    name: Annotated[str, typer.Argument(help="The signal's name, as the job waits for it.",
                                        metavar="NAME", show_default=False)],
    value: Annotated[str | None, typer.Option(
        "--value", metavar="JSON", help="The signal's value as JSON [default: null].")] = None,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Send a signal to a job, e.g. a human approval.

    A job waiting for it (`job status` shows its question) is queued at once and its
    wait_for_signal returns the value; a job not waiting yet keeps the signal and takes it
    when it waits (each signal once). A finished job takes no signals (exit 2).

    Example: tether job signal 42 approve --value '{"approved": true}'
    """
    parsed = parse_json(value, what="--value") if value is not None else None
    app = open_app(database_url)
    before = str(app.get(job_id).state)
    job = app.signal(job_id, name, parsed)
    if as_json:
        emit_json(job)
        return
    moved = f"{state_text(before)} → " if before != str(job.state) else ""
    out().print(f"job {job.id}: signal {escape(name)!r} sent; {moved}{state_text(job.state)}")


@job_app.command("callback")
def callback(
    job_id: JobId,
    expires_in: Annotated[float | None, typer.Option(
        "--expires-in", metavar="SECONDS", min=1,
        help="Seconds until the URL expires [default: seven days].")] = None,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Make a callback URL for a job waiting for a signal: one POST of a value to it answers
    the job, no API token needed (or open it in a browser for Approve and Reject).

    The URL is printed once (only its token's hash is stored) under TETHER_PUBLIC_URL, the
    address the API is reached at. `job status` lists a job's callbacks and their state.
    """
    app = open_app(database_url)
    made = app.issue_callback(job_id, expires_in=expires_in, issued_by="cli")
    if as_json:
        emit_json(made.to_dict())
        return
    out().print(f"job {job_id}: callback {made.id} for signal {escape(made.signal)!r}, "
                f"single use, expires {made.expires_at.isoformat()}")
    out().print(escape(str(made.url)), soft_wrap=True)


@job_app.command("budget")
def budget(
    job_id: JobId,
    max_cost: MaxCost = None,
    max_calls: MaxCalls = None,
    max_input_tokens: MaxInputTokens = None,
    max_output_tokens: MaxOutputTokens = None,
    max_duration: MaxDuration = None,
    max_examples: MaxExamples = None,
    thresholds: Thresholds = None,
    soft: Soft = None,
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
                           max_duration=max_duration, max_examples=max_examples,
                           thresholds=thresholds, soft=soft)
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
