"""Run one claimed job and report its outcome under the lease.

The executor turns whatever the job did into exactly one ``Outcome``: a result, a classified
failure (``core.retry``), or a control signal (cancel, pause, budget, shutdown). A lost lease
reports nothing, because a worker that no longer holds the lease may not write.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from dataclasses import replace
from typing import Any
from collections.abc import Callable

from ..core.retry import classify, summarize
from ..core.serialize import dumps
from ..core.states import JobState
from ..errors import (
    BudgetExhausted, ControlSignal, InvalidPayload, JobCancelled, JobPaused, JobWaiting,
    JournalMismatch, LeaseLost, StoreError, TetherError, UnknownJobType, WorkerShutdown,
)
from ..job import JobContext, JobStore, Lease
from ..records import Job
from ..registry import JobType
from ..store.base import Outcome
from ..tracing import attempt as trace_attempt
from .host import WorkerHost

log = logging.getLogger("tether.worker")


def run_job(job_type: JobType, ctx: JobContext) -> Any:
    """Call the job's function (sync or async), or its stages in order."""
    if job_type.stages:
        value = ctx.payload
        for fn in job_type.stages:
            name = JobType.stage_name(fn)
            value = ctx.stage(name, _bind(fn, ctx, value), version=JobType.stage_version(fn))
        return value
    assert job_type.fn is not None, "a job type without stages has a function"
    if job_type.is_async:
        return asyncio.run(job_type.fn(ctx, ctx.payload))
    return job_type.fn(ctx, ctx.payload)


def _bind(fn: Any, ctx: JobContext, value: Any) -> Any:
    if inspect.iscoroutinefunction(fn):
        return lambda: asyncio.run(fn(ctx, value))
    return lambda: fn(ctx, value)


def outcome_for_signal(sig: ControlSignal) -> Outcome | None:
    if isinstance(sig, LeaseLost):
        return None
    if isinstance(sig, JobCancelled):
        return Outcome(JobState.CANCELLED, error_code="cancelled", error_summary=sig.message,
                       kind="cancelled")
    if isinstance(sig, BudgetExhausted):
        code = ("period_budget_exhausted" if sig.details.get("resume")
                and sig.details.get("resets_at") is not None else "budget_exhausted")
        return Outcome(JobState.PAUSED, error_code=code, error_summary=sig.message,
                       kind="budget_exhausted", data=dict(sig.details))
    if isinstance(sig, JournalMismatch):
        return Outcome(JobState.PAUSED, error_code=sig.code, error_summary=sig.message,
                       kind=sig.code, data=dict(sig.details))
    if isinstance(sig, JobPaused):
        return Outcome(JobState.PAUSED, kind="paused")
    if isinstance(sig, WorkerShutdown):
        return Outcome(JobState.QUEUED, kind="handed_back")
    if isinstance(sig, JobWaiting):
        return Outcome(JobState.WAITING, kind="waiting")
    return Outcome(JobState.FAILED, error_code=sig.code, error_summary=sig.message)


def execute(app: WorkerHost, job: Job, lease: Lease, store: JobStore | None = None, *,
            started: bool = False,
            complete: Callable[[Lease, Outcome], None] | None = None) -> JobState | None:
    """Start (unless the claim already did), run and finish one claimed job. Returns the state
    it ended in (None: lease lost). ``store`` is how this worker writes (the worker passes its
    group-committing store). The context of the attempt is built here."""
    store = store or app.store
    try:
        state = JobState.RUNNING if started else store.start(job.id, lease.attempt)
    except LeaseLost:
        return None
    if state == JobState.CANCELLING:
        return _finish(store, job, lease,
                       outcome_for_signal(JobCancelled("cancelled before start")))
    if state == JobState.PAUSING:
        return _finish(store, job, lease, outcome_for_signal(JobPaused("paused before start")))

    ctx = JobContext(app, job, lease, store)
    outcome: Outcome | None
    if lease.pending is not None:  # stopped while it waited for a slot: run no job code
        return _report(store, job, lease, outcome_for_signal(lease.pending), complete)
    ctx.trace = trace = trace_attempt(job, lease.attempt)
    try:
        job_type = app.registry.get(job.type)
        ctx.on_change = job_type.on_change
        result = run_job(job_type, ctx)
        if lease.raised is not None:  # job code swallowed a control signal; it still counts
            raise lease.raised
        if lease.pending is not None and not isinstance(lease.pending, WorkerShutdown):
            raise lease.pending  # a job that returned while its worker drained keeps its result
        outcome = Outcome(JobState.SUCCEEDED, result_json=dumps(result, what="result"))
    except ControlSignal as sig:
        outcome = outcome_for_signal(lease.raised or sig)
    except UnknownJobType as exc:  # claimed without a type filter (a worker never is)
        log.warning("job %s: %s", job.id, exc.message)
        outcome = Outcome(JobState.FAILED, error_code=exc.code, error_summary=exc.message)
    except InvalidPayload as exc:
        outcome = Outcome(JobState.FAILED, error_code="invalid_result", error_summary=exc.message)
    except BaseException as exc:  # every failure is classified and recorded
        if not isinstance(exc, Exception):
            trace.end(None)
            raise
        if lease.raised is not None:
            outcome = outcome_for_signal(lease.raised)
        else:
            found = app.registry.find(job.type)
            decision = classify(exc, attempt=lease.attempt, max_attempts=job.max_attempts,
                                policy=found.retry if found else app.default_retry)
            to = {"retry": JobState.RETRY_WAIT, "fail": JobState.FAILED,
                  "pause": JobState.PAUSED}[decision.action]
            outcome = Outcome(to, error_code=decision.error_code,
                              error_summary=decision.error_summary, delay_s=decision.delay_s)
            if not isinstance(exc, TetherError):
                log.warning("job %s (%s) raised %s", job.id, job.type, summarize(exc))
    trace.end(str(outcome.state) if outcome is not None else None,
              outcome.error_code if outcome is not None else None)
    if outcome is not None and ctx.stats:
        outcome = replace(outcome, data={**outcome.data, "stats": dict(ctx.stats)})
    return _report(store, job, lease, outcome, complete)


def _report(store: JobStore, job: Job, lease: Lease, outcome: Outcome | None,
            complete: Callable[[Lease, Outcome], None] | None) -> JobState | None:
    if complete is not None:  # the worker's completer writes it, batched with others
        if outcome is not None and not lease.lost:
            complete(lease, outcome)
        return None
    return _finish(store, job, lease, outcome)


def _finish(store: JobStore, job: Job, lease: Lease, outcome: Outcome | None) -> JobState | None:
    if outcome is None or lease.lost:
        return None
    delay = 0.1
    while True:
        try:
            return store.finish(job.id, lease.attempt, outcome)
        except LeaseLost:
            log.warning("job %s: lease %s lost before its outcome could be written", job.id,
                        lease.attempt)
            return None
        except StoreError as exc:
            # The outcome is known but the store cannot take it now (disk full, database
            # down). Keep the lease and try again: this worker's heartbeat renews every lease
            # it holds, so giving up here would strand the job, leased but never finished.
            # Heartbeats failing for a whole lease TTL mark the lease lost, which ends this.
            if lease.lost:
                return None
            log.warning("job %s: could not record its outcome (%s); retrying in %.1fs",
                        job.id, exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
