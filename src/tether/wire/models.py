"""The wire shapes of jobs, events, budgets (pydantic v2).

Requests forbid unknown fields; money is a decimal string.

These models are the public contract of ``/api/v1`` and of the MCP tools: ``JobOut.of(job)``
is how every interface presents a job.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Protocol
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ..core.states import JobState
from ..facade.workflows import WaitingFor
from ..records import Attempt, Event, Job
from ..fleet import QueueInfo, WorkerInfo
from . import flowkeys as flow
from .numbers import (COUNT_MAX, INT32, USD_LIMIT, USD_MAX, JsonNumber, MaybeMoney, Money,
                      UnixSeconds, money_text)
from .signals import WaitingForOut
from .thresholds import AlertsIn, AlertsOut


# --- requests -------------------------------------------------------------------------------------

class BudgetLimits(AlertsIn):
    """Budget limits; each is optional (absent means unlimited, or unchanged on PATCH)."""

    model_config = ConfigDict(extra="forbid")

    max_cost_usd: USD_LIMIT | None = Field(None, ge=0, le=USD_MAX)
    max_calls: Annotated[int | None, Field(ge=0, le=COUNT_MAX), JsonNumber] = None
    max_input_tokens: Annotated[int | None, Field(ge=0, le=COUNT_MAX), JsonNumber] = None
    max_output_tokens: Annotated[int | None, Field(ge=0, le=COUNT_MAX), JsonNumber] = None
    max_duration_s: Annotated[float | None, Field(ge=0, le=1e12), JsonNumber] = None
    max_examples: Annotated[int | None, Field(ge=0, le=COUNT_MAX), JsonNumber] = None

    def to_facade(self) -> dict[str, Any]:
        out = self.model_dump(exclude_none=True)
        if "max_cost_usd" in out:
            out["max_cost_usd"] = str(out["max_cost_usd"])
        return out


class BudgetChange(BudgetLimits):
    """``PATCH /jobs/{id}/budget``: the limits to change, and whether a job paused because its
    budget ran out resumes at once (``resume``, default true) or stays paused."""

    resume: StrictBool = Field(True, description="resume a job paused by budget_exhausted; "
                                                 "false only raises the limits")

    def to_facade(self) -> dict[str, Any]:
        out = super().to_facade()
        out.pop("resume", None)
        return out


class JobCreate(BaseModel):
    """``POST /jobs``. The idempotency key travels in the ``Idempotency-Key`` header."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1, max_length=200, description="a registered job type")
    payload: Any = Field(None, description="any JSON value, handed to the job function")
    project: str | None = Field(None, min_length=1, max_length=200,
                                description="defaults to the token's only project (admin: default)")
    queue: str | None = Field(None, min_length=1, max_length=200)
    priority: Annotated[int | None, Field(ge=-INT32, le=INT32, description="lower runs first"),
                        JsonNumber] = None
    run_after: Annotated[datetime | None, UnixSeconds] = Field(
        None, description="do not start before this time")
    max_attempts: Annotated[int | None, Field(ge=1, le=1000), JsonNumber] = None
    budget: BudgetLimits | None = None
    singleton: bool | None = Field(None, description=flow.SINGLETON_HELP)
    debounce_s: flow.Window = None
    flow_key: flow.Key = None


class CancelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=1000)


OnChange = Literal["reuse", "repay"]
ON_CHANGE_HELP = ("for a job paused by journal_mismatch: reuse the recorded answers of the "
                  "calls (and checkpoints of the stages) that changed, or repay them (each "
                  "re-paid call gets a ledger row of its own); absent: it pauses again there")


class ResumeRequest(BaseModel):
    """``POST /jobs/{id}/resume``: optionally the decision for changed calls and stages."""

    model_config = ConfigDict(extra="forbid")

    on_change: OnChange | None = Field(None, description=ON_CHANGE_HELP)


# --- responses ------------------------------------------------------------------------------------

class BudgetUsed(BaseModel):
    """What a job has spent, and what it has reserved for calls in flight."""

    spent_usd: Money = "0"
    reserved_usd: Money = "0"
    calls: int = 0
    reserved_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reserved_input_tokens: int = 0
    reserved_output_tokens: int = 0
    examples: int = 0


class BudgetLimitsOut(AlertsOut):
    max_cost_usd: MaybeMoney = None
    max_calls: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_duration_s: float | None = None
    max_examples: int | None = None


class BudgetOut(BaseModel):
    limits: BudgetLimitsOut
    used: BudgetUsed


class JobOut(BaseModel):
    """A job as every interface shows it."""

    id: int
    type: str
    version: str = Field("", description=(
        "the job type's version it was submitted at (empty: unversioned); only a worker "
        "serving that version claims it"))
    project: str
    queue: str
    state: JobState
    terminal: bool
    stage: str | None
    attempt_count: int
    max_attempts: int
    priority: int
    idempotency_key: str | None
    input_config_hash: str
    run_after: datetime = Field(description=(
        "not run before this time; a job paused by period_budget_exhausted resumes by itself "
        "then (its project's budget period ends)"))
    payload: Any = None
    result: Any = None
    error_code: str | None
    error_summary: str | None
    estimated_cost_usd: MaybeMoney = Field(description="pre-flight estimate, when one was made")
    actual_cost_usd: Money = Field(description="spent so far (settled calls and lost "
                                               "reservations)")
    reserved_cost_usd: Money = Field(description="reserved for calls in flight")
    budget: BudgetOut
    lease_owner: str | None
    lease_expires_at: datetime | None
    safe_to_retry: bool
    parent_id: int | None = None
    price_profile: str | None = None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    waiting_for: WaitingForOut | None = Field(None, description=(
        "a waiting job's open wait (a signal's question, a timer, children); given where "
        "one job is read, null in job lists"))
    unserved: bool = Field(False, description=(
        "queued, and no live worker serves its type on its queue (no running worker's app "
        "registers the type): it stays queued, not failed, until such a worker starts"))
    flow_mode: flow.Mode | None = Field(None, description=flow.MODE_HELP)
    flow_key: str | None = Field(None, description=flow.KEY_HELP)
    type_paused: bool = Field(False, description="its job type is paused: no worker claims it")

    @classmethod
    def of(cls, job: Job, waiting: WaitingFor | None = None, *,
           unserved: bool = False, type_paused: bool = False) -> JobOut:
        budget = job.budget.to_dict()
        used = BudgetUsed(**{k: v for k, v in budget["used"].items()
                             if k in BudgetUsed.model_fields})
        limits = BudgetLimitsOut(**{k: v for k, v in budget["limits"].items()
                                    if k in BudgetLimitsOut.model_fields})
        return cls(
            id=job.id, type=job.type, version=job.version, project=job.project,
            queue=job.queue, state=job.state,
            terminal=job.terminal, stage=job.stage, attempt_count=job.attempt_count,
            max_attempts=job.max_attempts, priority=job.priority,
            idempotency_key=job.idempotency_key, input_config_hash=job.input_config_hash,
            run_after=job.run_after, payload=job.payload, result=job.result,
            error_code=job.error_code, error_summary=job.error_summary,
            estimated_cost_usd=money_text(job.estimated_cost_usd), actual_cost_usd=used.spent_usd,
            reserved_cost_usd=used.reserved_usd, budget=BudgetOut(limits=limits, used=used),
            lease_owner=job.lease_owner, lease_expires_at=job.lease_expires_at,
            safe_to_retry=job.safe_to_retry, parent_id=job.parent_id,
            price_profile=job.price_profile, created_at=job.created_at,
            updated_at=job.updated_at, finished_at=job.finished_at,
            waiting_for=WaitingForOut.of(waiting) if waiting is not None else None,
            unserved=unserved, type_paused=type_paused, flow_mode=job.flow_mode,
            flow_key=job.flow_key)


class JobReads(Protocol):
    """What presenting a job reads beyond the job (``Tether``'s)."""

    def waiting_summary(self, job_id: int, *,
                        projects: Iterable[str] | None = None) -> WaitingFor | None: ...
    def unserved(self, jobs: Iterable[Job]) -> set[int]: ...
    def paused_types(self) -> dict[str, bool]: ...


def job_detail(app: JobReads, job: Job, projects: Iterable[str] | None = None) -> JobOut:
    """One job as the job routes and tools answer with it: a waiting job with what it waits
    for, a queued one with whether a live worker serves it (one more read for either)."""
    waiting = (app.waiting_summary(job.id, projects=projects)
               if job.state == JobState.WAITING else None)
    return JobOut.of(job, waiting, unserved=job.id in app.unserved([job]),
                     type_paused=app.paused_types().get(job.type, False))


def job_page(app: JobReads, jobs: list[Job], next_cursor: str | None) -> JobPage:
    """A page of jobs, each queued one marked ``unserved`` or not (one read for the page),
    each marked ``type_paused`` when its type is paused (one read of the paused types)."""
    unserved, paused = app.unserved(jobs), app.paused_types()
    return JobPage(items=[JobOut.of(j, unserved=j.id in unserved,
                                    type_paused=paused.get(j.type, False)) for j in jobs],
                   next_cursor=next_cursor)


class JobPage(BaseModel):
    items: list[JobOut]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next (older) page; "
                                                "null on the last page")


class EventOut(BaseModel):
    job_id: int
    seq: int
    at: datetime
    kind: str
    from_state: str | None
    to_state: str | None
    attempt: int | None
    data: dict[str, Any]

    @classmethod
    def of(cls, event: Event) -> EventOut:
        return cls(**event.to_dict())


class EventPage(BaseModel):
    items: list[EventOut]
    next_after: int = Field(description="the last seq returned (or ?after=); poll with "
                                        "?after=next_after for newer events")
    has_more: bool


class AttemptOut(BaseModel):
    job_id: int
    attempt: int
    worker_id: str
    claimed_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    outcome: str | None
    error_code: str | None
    error_summary: str | None

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptOut:
        return cls(**attempt.to_dict())


class AttemptList(BaseModel):
    items: list[AttemptOut]


class LedgerEntryOut(BaseModel):
    """One settled provider call: tokens, unit prices (USD per million tokens), cost, and the
    price profile they came from. ``confirmed`` is false when a crash left the outcome unknown
    and the reservation was counted as spent."""

    model_config = ConfigDict(extra="allow")

    id: int
    job_id: int
    project: str
    stage: str | None = None
    key: str
    attempt: int
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    input_per_mtok: MaybeMoney = None
    output_per_mtok: MaybeMoney = None
    cached_input_per_mtok: MaybeMoney = None
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_write_per_mtok: MaybeMoney = None
    cache_write_1h_per_mtok: MaybeMoney = None
    price_profile: str | None = None
    cost_usd: MaybeMoney = None
    reserved_usd: MaybeMoney = None
    confirmed: bool
    overrun: bool = False
    created_at: datetime
    reused_from: int | None = Field(None, description="a call a fork carried over: the job "
                                                      "that paid for it (cost_usd is 0 here)")
    reused_cost_usd: MaybeMoney = Field(None, description="what the carried call cost in "
                                                          "reused_from, for information")


class LedgerList(BaseModel):
    items: list[LedgerEntryOut]


class CheckpointOut(BaseModel):
    """A finished stage: its output blob (sha256) was durable before this row committed."""

    job_id: int
    stage: str
    position: int
    blob: str
    size: int
    attempt: int
    created_at: str
    reused_from: int | None = Field(None, description="a stage a fork carried over: the job "
                                                      "that ran it")


class CheckpointList(BaseModel):
    items: list[CheckpointOut]


class QueueOut(BaseModel):
    name: str
    paused: bool
    counts: dict[str, int] = Field(description="jobs in this queue by state")

    @classmethod
    def of(cls, queue: QueueInfo) -> QueueOut:
        return cls(name=queue.name, paused=queue.paused, counts=dict(queue.counts))


class QueueList(BaseModel):
    items: list[QueueOut]


class WorkerOut(BaseModel):
    id: str
    hostname: str
    pid: int
    queues: list[str]
    concurrency: int
    started_at: datetime
    last_heartbeat_at: datetime
    stopped_at: datetime | None
    leases: int
    types: list[str] | None = Field(None, description=(
        "the job types it claims (its app's); null: a worker of a release before workers "
        "recorded them, which claims every type"))
    lease_ttl: float | None = Field(None, description=(
        "its lease TTL: silent that long, it no longer counts as live"))

    @classmethod
    def of(cls, worker: WorkerInfo) -> WorkerOut:
        return cls(**worker.to_dict())


class WorkerList(BaseModel):
    items: list[WorkerOut]


class Health(BaseModel):
    status: str
    version: str
