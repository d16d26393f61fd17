"""``/api/v1/jobs/{id}/signals/{name}``, ``/api/v1/jobs/{id}/waits`` and
``/api/v1/jobs/{id}/batches``: answering a waiting job, and what it waits on.

Thin over the facade (``app.signal``, ``app.waits``) with ``projects=principal.scope``: a job of
another project answers 404 ``job_not_found``, a finished job 409 ``invalid_transition``. A
signal sent before the job waits is kept in its mailbox and consumed by exactly one wait.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path

from ..app import Tether
from ..wire.models import JobOut, job_detail
from ..wire.signals import BatchList, BatchOut, SignalBody, WaitList, WaitOut
from .auth import Principal, principal
from .openapi import problem_responses as _errors
from .routes_jobs import JobId, tether

router = APIRouter(prefix="/jobs", tags=["jobs"])

SignalName = Annotated[str, Path(
    min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$",
    description="the signal's name (1-200 printable characters other than `/`, not `.` or "
                "`..`), as the job's ctx.wait_for_signal names it")]


@router.post(
    "/{job_id}/signals/{name}", response_model=JobOut, responses=_errors(404, 409, 413),
    summary="Send a signal to a job (e.g. a human approval)",
    description="The body `{\"value\": <any JSON>}` is optional (absent: null). A job waiting "
                "for this signal is queued at once and its `ctx.wait_for_signal` returns the "
                "value; a job not waiting yet keeps the signal in its mailbox, and the first "
                "wait for that name consumes it (each signal exactly once). Answers the job as "
                "it is afterwards; 409 `invalid_transition` for a finished job.")
def send_signal(job_id: JobId, name: SignalName, who: Principal = Depends(principal),
                app: Tether = Depends(tether),
                body: Annotated[SignalBody | None, Body()] = None) -> JobOut:
    value = body.value if body is not None else None
    job = app.signal(job_id, name, value, projects=who.scope)
    return job_detail(app, job, who.scope)


# A name holding "/" (sent as %2F, which the server decodes) is refused by the facade with
# invalid_argument naming the rule, rather than a bare 404 from the router.
router.add_api_route("/{job_id}/signals/{name:path}", send_signal, methods=["POST"],
                     response_model=JobOut, include_in_schema=False)


@router.get("/{job_id}/waits", response_model=WaitList, responses=_errors(404),
            summary="The job's waits, oldest first: signals, timers and gathers, open or done")
def job_waits(job_id: JobId, who: Principal = Depends(principal),
              app: Tether = Depends(tether)) -> WaitList:
    return WaitList(items=[WaitOut.of(w) for w in app.waits(job_id, projects=who.scope)])


@router.get("/{job_id}/batches", response_model=BatchList, responses=_errors(404),
            summary="The job's provider batches, oldest first: ids, items, money")
def job_batches(job_id: JobId, who: Principal = Depends(principal),
                app: Tether = Depends(tether)) -> BatchList:
    return BatchList(items=[BatchOut(**b.to_dict())
                            for b in app.batches(job_id, projects=who.scope)])

