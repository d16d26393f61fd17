"""``/api/v1/jobs``: submit (idempotent, optionally waiting), read, page, control, budget.

Every handler is a thin call into the facade with ``projects=principal.scope``, so a job of
another project answers 404 ``job_not_found``, exactly like a job that does not exist.
"""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from decimal import Decimal
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from ..app import Tether
from ..core.states import JobState
from ..records import Job
from ..wire import idempotency, pagination
from .wait_hub import WaitHub
from .auth import Principal, principal
from .openapi import problem_responses as _errors
from ..wire.problems import Problem
from ..wire.forks import ForkRequest, RetryRequest
from ..wire.models import (
    AttemptList, AttemptOut, BudgetChange, CancelRequest, CheckpointList, CheckpointOut,
    EventOut, EventPage, JobCreate, JobOut, JobPage, LedgerEntryOut, LedgerList,
    ResumeRequest, job_detail, job_page,
)
from ..wire.numbers import INT63

router = APIRouter(prefix="/jobs", tags=["jobs"])

MAX_WAIT_S = 300.0
JobId = Annotated[int, Path(ge=1, le=INT63, description="job id")]
IdempotencyKey = Annotated[str | None, Header(
    alias=idempotency.HEADER, description="1-200 visible ASCII characters; any other is 400 "
    "invalid_idempotency_key", json_schema_extra={"pattern": "^[!-~]{1,200}$"})]


class WaitKind(StrEnum):
    """What a waiting job waits for (``core.waits.KINDS``)."""

    signal = "signal"
    timer = "timer"
    children = "children"
    provider_batch = "provider_batch"


def tether(request: Request) -> Tether:
    return request.app.state.tether


def _options(body: JobCreate, who: Principal) -> dict[str, Any]:
    project = who.write_project(body.project, where="body", verb="submit to")
    options: dict[str, Any] = {"type": body.type, "payload": body.payload, "project": project}
    for name in ("queue", "priority", "run_after", "max_attempts", "singleton", "debounce_s",
                 "flow_key"):
        value = getattr(body, name)
        if value is not None:
            options[name] = value
    if body.budget is not None:
        options["budget"] = body.budget.to_facade()
    return options


def waits(request: Request) -> WaitHub:
    return request.app.state.waits


@router.post(
    "", status_code=201, response_model=JobOut,
    summary="Submit a job",
    description="201 when created; 200 with the existing job when the Idempotency-Key and the "
                "body repeat, or when `flow_key` names a live singleton or a pending debounced "
                "job (whose payload this body replaced); 422 `idempotency_conflict` when the "
                "key was used with another body; "
                "400 for a malformed key. With `?wait=SECONDS` the call waits for a terminal state "
                "and answers 202 with the job if it is still running; a token holding too many "
                "waits open gets 429 `too_many_waits` with Retry-After.",
    responses={200: {"model": JobOut, "description": "the job this key already created"},
               202: {"model": JobOut, "description": "submitted, still running after ?wait"},
               **_errors(400, 403, 413, 429)})
async def submit_job(
    body: JobCreate, response: Response,
    who: Principal = Depends(principal), app: Tether = Depends(tether),
    hub: WaitHub = Depends(waits),
    idempotency_key: IdempotencyKey = None,
    wait: Annotated[float | None, Query(ge=0, le=MAX_WAIT_S, description=(
        "seconds to wait for a terminal state"))] = None,
) -> JobOut:
    key = idempotency.parse_key(idempotency_key)
    options = _options(body, who)
    with hub.slot(who.id, wait) if wait else nullcontext():
        job, created = await run_in_threadpool(idempotency.submit, app, options, key)
        response.status_code = 201 if created else 200
        if created:
            response.headers["Location"] = f"/api/v1/jobs/{job.id}"
        if wait:
            job = await hub.wait(job, wait, who.token_id)
            if not job.terminal:
                response.status_code = 202
    return job_detail(app, job, who.scope)


@router.get("", response_model=JobPage, summary="List jobs, newest first",
            responses=_errors(403))
def list_jobs(
    who: Principal = Depends(principal), app: Tether = Depends(tether),
    project: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    state: JobState | None = None,
    type: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    queue: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    search: Annotated[str | None, Query(min_length=1, max_length=200,
                                        description="a job id or an idempotency key")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=100,
                                        description="next_cursor of the previous page")] = None,
    waiting_for: Annotated[WaitKind | None, Query(description=(
        "only waiting jobs blocked on this kind of wait; `signal`: the jobs waiting for an "
        "answer (the dashboard's \"Waiting for me\")"))] = None,
) -> JobPage:
    before = pagination.decode(cursor)
    if project is not None and not who.allows(project):
        raise Problem(403, "forbidden", f"this token may not read project {project!r}")
    if waiting_for is not None:
        page = [] if state not in (None, JobState.WAITING) else app.list_waiting(
            waiting_for.value, project=project, projects=who.scope, type=type, queue=queue,
            search=search, before_id=before, limit=limit + 1)
    else:
        page = app.list(project=project, projects=who.scope, state=state, type=type,
                        queue=queue, search=search, before_id=before, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    return job_page(app, page, pagination.encode(page[-1].id) if more else None)


@router.get("/{job_id}", response_model=JobOut, summary="Get a job", responses=_errors(404))
def get_job(job_id: JobId, who: Principal = Depends(principal),
            app: Tether = Depends(tether)) -> JobOut:
    return job_detail(app, app.get(job_id, projects=who.scope), who.scope)


@router.get("/{job_id}/events", response_model=EventPage, responses=_errors(404),
            summary="A job's event log, in seq order, after a seq")
def job_events(job_id: JobId, who: Principal = Depends(principal),
               app: Tether = Depends(tether),
               after: Annotated[int, Query(ge=0, le=INT63)] = 0,
               limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> EventPage:
    events = app.events(job_id, after=after, limit=limit + 1, projects=who.scope)
    if not events:
        app.get(job_id, projects=who.scope)
    more = len(events) > limit
    events = events[:limit]
    return EventPage(items=[EventOut.of(e) for e in events],
                     next_after=events[-1].seq if events else after, has_more=more)


@router.get("/{job_id}/attempts", response_model=AttemptList, responses=_errors(404),
            summary="One record per attempt")
def job_attempts(job_id: JobId, who: Principal = Depends(principal),
                 app: Tether = Depends(tether)) -> AttemptList:
    app.get(job_id, projects=who.scope)
    return AttemptList(items=[AttemptOut.of(a) for a in app.attempts(job_id, projects=who.scope)])


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@router.get("/{job_id}/ledger", response_model=LedgerList, responses=_errors(404),
            summary="The job's cost-ledger rows (money as decimal strings)")
def job_ledger(job_id: JobId, who: Principal = Depends(principal),
               app: Tether = Depends(tether)) -> LedgerList:
    app.get(job_id, projects=who.scope)
    if not hasattr(app, "ledger"):
        return LedgerList(items=[])
    rows = app.ledger(job_id, projects=who.scope)
    return LedgerList(items=[LedgerEntryOut(**_jsonable(r.to_dict())) for r in rows])


@router.get("/{job_id}/checkpoints", response_model=CheckpointList, responses=_errors(404),
            summary="The job's finished stages (each output is a content-addressed blob)")
def job_checkpoints(job_id: JobId, who: Principal = Depends(principal),
                    app: Tether = Depends(tether)) -> CheckpointList:
    rows = app.checkpoints(job_id, projects=who.scope)
    return CheckpointList(items=[CheckpointOut(**_jsonable(r.to_dict())) for r in rows])


def _control(name: str, summary: str) -> None:
    def handler(job_id: JobId, who: Principal = Depends(principal),
                app: Tether = Depends(tether)) -> JobOut:
        action: Callable[..., Job] = getattr(app, name)
        return job_detail(app, action(job_id, projects=who.scope), who.scope)

    handler.__name__ = f"{name}_job"
    router.add_api_route(f"/{{job_id}}/{name}", handler, methods=["POST"], response_model=JobOut,
                         summary=summary, responses=_errors(404, 409))


@router.post("/{job_id}/cancel", response_model=JobOut, responses=_errors(404, 409, 413),
             summary="Cancel: at once unless running, else at the next safe boundary")
def cancel_job(job_id: JobId, who: Principal = Depends(principal),
               app: Tether = Depends(tether),
               body: Annotated[CancelRequest | None, Body()] = None) -> JobOut:
    reason = body.reason if body is not None else None
    return job_detail(app, app.cancel(job_id, reason=reason, projects=who.scope), who.scope)


_control("pause", "Pause: at once if waiting, else at the next safe boundary")


@router.post("/{job_id}/resume", response_model=JobOut, responses=_errors(404, 409, 413),
             summary="Resume a paused job (it continues from its checkpoints)",
             description="A job paused by `journal_mismatch` (a call or stage changed since it "
                         "was recorded) takes `on_change`: `reuse` or `repay`. 409 "
                         "`invalid_transition` for `on_change` on any other job.")
def resume_job(job_id: JobId, who: Principal = Depends(principal),
               app: Tether = Depends(tether),
               body: Annotated[ResumeRequest | None, Body()] = None) -> JobOut:
    on_change = body.on_change if body is not None else None
    return job_detail(app, app.resume(job_id, on_change=on_change, projects=who.scope), who.scope)


@router.post("/{job_id}/retry", response_model=JobOut, responses=_errors(404, 409, 413),
             summary="Queue a failed job again, optionally from a stage",
             description="With `from_stage`, the job's checkpoints from that stage on and the "
                         "finished calls of those stages are dropped first: they run, and are "
                         "paid, again. 422 `invalid_argument` for a stage the job does not have "
                         "or never reached.")
def retry_job(job_id: JobId, who: Principal = Depends(principal),
              app: Tether = Depends(tether),
              body: Annotated[RetryRequest | None, Body()] = None) -> JobOut:
    from_stage = body.from_stage if body is not None else None
    return job_detail(app, app.retry(job_id, from_stage=from_stage, projects=who.scope),
                      who.scope)


@router.post("/{job_id}/fork", status_code=201, response_model=JobOut,
             responses={200: {"model": JobOut, "description": "the fork this key already made"},
                        **_errors(400, 404, 413)},
             summary="Make a new job from a job's stage on, reusing the stages before it",
             description="The source's finished stages before `from_stage` and their calls are "
                         "carried over: not run, paid or counted again (the fork's ledger lists "
                         "them at cost 0 with `reused_from`). 201 with the new job; 200 with "
                         "the fork already made when the Idempotency-Key, source, stage and "
                         "body repeat; 422 `idempotency_conflict` when the key was used "
                         "otherwise; 422 `invalid_argument` for a stage the source does not "
                         "have or never reached.")
def fork_job(job_id: JobId, body: ForkRequest, response: Response,
             who: Principal = Depends(principal), app: Tether = Depends(tether),
             idempotency_key: IdempotencyKey = None) -> JobOut:
    key = idempotency.parse_key(idempotency_key)
    budget = body.budget.to_facade() if body.budget is not None else None
    job, created = app.fork_with_status(job_id, from_stage=body.from_stage,
                                        payload=body.payload, budget=budget,
                                        idempotency_key=key, projects=who.scope)
    if created:
        response.headers["Location"] = f"/api/v1/jobs/{job.id}"
    else:
        response.status_code = 200
    return job_detail(app, job, who.scope)
_control("requeue", "Queue an interrupted (or paused, or failed) job again")


@router.patch("/{job_id}/budget", response_model=JobOut, responses=_errors(404, 409, 413),
              summary="Change a job's budget limits; limits not named stay as they were",
              description="A job paused because its budget ran out resumes, unless the body "
                          "says `\"resume\": false`.")
def patch_budget(job_id: JobId, body: BudgetChange, who: Principal = Depends(principal),
                 app: Tether = Depends(tether)) -> JobOut:
    return job_detail(app, app.set_budget(job_id, body.to_facade(), resume=body.resume,
                                          projects=who.scope), who.scope)
