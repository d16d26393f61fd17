"""``tether submit``: enqueue one job and print it.

Without ``--app`` any type name is accepted (a worker with that type will run it); with ``--app``
the type must be registered, and the job type's defaults (queue, priority, attempts, budget)
apply. Re-submitting with the same ``--idempotency-key`` and configuration prints the existing
job (a note on stderr says so); the same key with another configuration exits 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from .options import (
    AppSpec, DatabaseUrl, IdempotencyKey, Json, MaxAttempts, MaxCalls, MaxCost, MaxDuration,
    MaxExamples, MaxInputTokens, MaxOutputTokens, Payload, PayloadFile, Priority, Project, Queue,
    RunAfter, Soft, Thresholds, open_app,
)
from .output import CliError, emit_json, note, out, state_text
from .parse import budget_limits, parse_when, read_payload
from .prices import dry_run

if TYPE_CHECKING:
    from ..app import Tether
    from ..records import Job

JobType = Annotated[str, typer.Argument(help="The job type's name.", metavar="TYPE",
                                        show_default=False)]


@dataclass
class SubmitSpec:
    """One submission as the command line described it: ``app.submit(spec.type, spec.payload,
    **spec.options())``."""

    type: str
    payload: Any = None
    project: str = "default"
    idempotency_key: str | None = None
    queue: str | None = None
    priority: int | None = None
    run_after: float | None = None
    max_attempts: int | None = None
    budget: dict[str, Any] = field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        return {"project": self.project, "idempotency_key": self.idempotency_key,
                "queue": self.queue, "priority": self.priority, "run_after": self.run_after,
                "max_attempts": self.max_attempts, "budget": self.budget or None}

    def submit(self, app: Tether) -> tuple[Job, bool]:
        """Enqueue; also says whether the job is new (False: an idempotent repeat)."""
        return app.submit_with_status(self.type, self.payload, **self.options())


def build_spec(job_type: str, *, payload: str | None, payload_file: Path | None, project: str,
               idempotency_key: str | None, queue: str | None, priority: int | None,
               run_after: str | None, max_attempts: int | None, max_cost: Decimal | None,
               max_calls: int | None, max_input_tokens: int | None,
               max_output_tokens: int | None, max_duration: str | None,
               max_examples: int | None, thresholds: str | None = None,
               soft: bool | None = None) -> SubmitSpec:
    return SubmitSpec(
        type=job_type, payload=read_payload(payload, payload_file), project=project,
        idempotency_key=idempotency_key, queue=queue, priority=priority,
        run_after=parse_when(run_after) if run_after is not None else None,
        max_attempts=max_attempts,
        budget=budget_limits(max_cost=max_cost, max_calls=max_calls,
                             max_input_tokens=max_input_tokens,
                             max_output_tokens=max_output_tokens, max_duration=max_duration,
                             max_examples=max_examples, thresholds=thresholds, soft=soft))


def announce(job: Job, created: bool) -> None:
    """Tell stderr when an idempotency key matched an existing job."""
    if not created:
        note(f"idempotency key {job.idempotency_key!r} matched existing job {job.id} "
             f"({job.state}); nothing new was submitted")


def _dry_run(app: Tether, spec: SubmitSpec, as_json: bool) -> int:
    """Price the submission with its type's estimator; the type must be known, so without
    ``--app`` (no job types loaded) the error says how to load them."""
    if len(app.registry) == 0:
        raise CliError(f"unknown job type {spec.type!r}: --dry-run prices a job with its type's "
                       "estimator, so it needs your job types: add --app MODULE:APP (or set "
                       "TETHER_APP)", code="unknown_job_type")
    return dry_run(app, spec, as_json=as_json)


def submit(
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
    thresholds: Thresholds = None,
    soft: Soft = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Estimate the cost against the budget; enqueue nothing.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the job id.")] = False,
    as_json: Json = False,
    app_spec: AppSpec = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Enqueue a job and print it (a worker runs it).

    Example: tether submit summarize --payload '{"url": "https://example.com"}' --max-cost 2
    """
    spec = build_spec(job_type, payload=payload, payload_file=payload_file, project=project,
                      idempotency_key=idempotency_key, queue=queue, priority=priority,
                      run_after=run_after, max_attempts=max_attempts, max_cost=max_cost,
                      max_calls=max_calls, max_input_tokens=max_input_tokens,
                      max_output_tokens=max_output_tokens, max_duration=max_duration,
                      max_examples=max_examples, thresholds=thresholds, soft=soft)
    app = open_app(database_url, app_spec, create=not dry_run)
    if dry_run:
        raise typer.Exit(_dry_run(app, spec, as_json))
    job, created = spec.submit(app)
    announce(job, created)
    if as_json:
        emit_json(job)
    elif quiet:
        out().print(str(job.id))
    else:
        out().print(f"job {job.id} {'submitted' if created else 'exists'}: "
                    f"{escape(job.type)} in {escape(job.project)}/{escape(job.queue)}, "
                    f"{state_text(job.state)}")
