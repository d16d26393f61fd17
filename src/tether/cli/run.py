"""``tether run``: submit a job and wait for it, with live progress on stderr.

With ``--app`` a worker runs inside this process (on the job's queue) until the job stops;
``--no-local`` (or no ``--app``) waits for the workers you run elsewhere. The command ends when
the job succeeds (exit 0), or ends failed or cancelled, pauses (for example on
``budget_exhausted``) or is interrupted (exit 1); ``--timeout`` also ends it with exit 1.
The final job is printed on stdout (``--json``: its ``to_dict()``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.states import TERMINAL, JobState
from . import extras, views
from .options import (
    AppSpec, DatabaseUrl, IdempotencyKey, Json, MaxAttempts, MaxCalls, MaxCost, MaxDuration,
    MaxExamples, MaxInputTokens, MaxOutputTokens, Payload, PayloadFile, Priority, Project, Queue,
    RunAfter, open_app,
)
from .output import EXIT_FAILED, EXIT_OK, CliError, emit_json, note, show
from .progress import Progress
from .submit import JobType, announce, build_spec

if TYPE_CHECKING:
    from ..app import Tether
    from ..records import Job

STOP = TERMINAL | {JobState.PAUSED, JobState.INTERRUPTED}


class LocalWorker:
    """A worker on a background thread for the duration of one ``run``."""

    def __init__(self, app: Tether, queue: str) -> None:
        self.worker = app.worker(concurrency=1, queues=[queue], poll_interval=0.05)
        self.thread = threading.Thread(target=self.worker.run, kwargs={"install_signals": False},
                                       name="tether-run-worker", daemon=True)

    def __enter__(self) -> LocalWorker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.worker.stop()
        self.thread.join()


def watch(app: Tether, job_id: int, *, timeout: float | None, progress: Progress,
          interval: float = 0.1) -> Job:
    """Poll the job, updating ``progress``, until it is in ``STOP`` or ``timeout`` passes."""
    deadline = None if timeout is None else time.monotonic() + timeout
    reused = extras.ReuseTally(app, job_id)
    while True:
        job = app.get(job_id)
        progress.update(job, reused.update())
        if job.state in STOP or (deadline is not None and time.monotonic() >= deadline):
            return job
        time.sleep(interval)


def _advice(job: Job) -> str | None:
    if job.state == JobState.PAUSED and job.error_code == "budget_exhausted":
        return (f"job {job.id} paused: its budget is spent. Raise it with "
                f"`tether job budget {job.id} --max-cost ...` and it continues")
    if job.state == JobState.PAUSED:
        return f"job {job.id} paused; continue it with `tether job resume {job.id}`"
    if job.state == JobState.INTERRUPTED:
        return f"job {job.id} was interrupted; `tether job requeue {job.id}` runs it again"
    if job.state == JobState.FAILED:
        return f"job {job.id} failed; `tether job retry {job.id}` queues it again"
    if job.state not in STOP:
        return (f"stopped waiting; job {job.id} is {job.state} "
                f"(see `tether job status {job.id}`)")
    return None


def run(
    job_type: JobType,
    payload: Payload = None,
    payload_file: PayloadFile = None,
    project: Project = "default",
    idempotency_key: IdempotencyKey = None,
    queue: Queue = None,
    priority: Priority = None,
    run_after: RunAfter = None,
    max_attempts: MaxAttempts = None,
    max_cost: MaxCost = None,
    max_calls: MaxCalls = None,
    max_input_tokens: MaxInputTokens = None,
    max_output_tokens: MaxOutputTokens = None,
    max_duration: MaxDuration = None,
    max_examples: MaxExamples = None,
    local: Annotated[bool | None, typer.Option(
        "--local/--no-local",
        help="Run a worker in this process [default: yes with --app, else wait for others].",
        show_default=False)] = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0, metavar="SECONDS",
        help="Stop waiting after this long (exit 1).")] = None,
    no_progress: Annotated[bool, typer.Option(
        "--no-progress", help="Do not show progress on stderr.")] = False,
    as_json: Json = False,
    app_spec: AppSpec = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Submit a job and wait for it, showing progress; exit 0 only if it succeeds.

    Example: tether run summarize --app myproject.jobs:app -p '{"url": "..."}' --max-cost 2
    """
    spec = build_spec(job_type, payload=payload, payload_file=payload_file, project=project,
                      idempotency_key=idempotency_key, queue=queue, priority=priority,
                      run_after=run_after, max_attempts=max_attempts, max_cost=max_cost,
                      max_calls=max_calls, max_input_tokens=max_input_tokens,
                      max_output_tokens=max_output_tokens, max_duration=max_duration,
                      max_examples=max_examples)
    if local and app_spec is None:
        raise CliError("--local runs the job here and needs your job types: pass --app MODULE:APP")
    app = open_app(database_url, app_spec, create=True)
    local = app_spec is not None if local is None else local
    job, created = spec.submit(app)
    announce(job, created)
    if not local and job.state not in STOP:
        note(f"job {job.id} submitted; waiting for a worker on queue {job.queue!r}")
    progress = Progress(enabled=not no_progress)
    try:
        with progress:
            if local and job.state not in STOP:
                with LocalWorker(app, job.queue):
                    job = watch(app, job.id, timeout=timeout, progress=progress)
                job = app.get(job.id)
            else:
                job = watch(app, job.id, timeout=timeout, progress=progress)
    except KeyboardInterrupt:
        job = app.get(job.id)
        note(f"interrupted; job {job.id} is {job.state} "
             f"(see `tether job status {job.id}`)")
        raise
    advice = _advice(job)
    if advice:
        note(advice)
    if as_json:
        emit_json(job)
    else:
        show(views.status_view, job, app.attempts(job.id), **extras.status_extras(app, job))
    raise typer.Exit(EXIT_OK if job.state == JobState.SUCCEEDED else EXIT_FAILED)
