"""The Store protocol: everything the engine asks of durable storage, and the row types.

Both backends (``sqlite/``, ``postgres/``) implement exactly this surface with these
signatures; ``tests/unit/test_store_protocol.py`` holds them to it. This module imports no
backend: ``open.py`` is the one place that knows them.

Every method that compares with "now" takes ``now`` (unix seconds); ``None`` means the
database's own clock, which is what production uses so that worker clocks never decide
expiry. Every write a worker makes about a job names its lease (``attempt``): if the job's
lease is no longer that attempt the write fails with ``LeaseLost`` and changes nothing.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol, TypedDict, runtime_checkable
from collections.abc import Iterable, Sequence

from ..core.budget import Budget, BudgetStatus, Reservation
from ..core.flowkeys import FlowMode
from ..core.headroom import Headroom, RateLimit, RateScope
from ..core.pricing import ModelPrice, PriceProfile
from ..core.serving import Serving
from ..core.spend import SpendQuery, SpendRow
from ..core.states import JobState
from ..core.usage import Usage
from ..core.waits import WaitSpec
from ..errors import LeaseLost
from .base_webhooks import WebhookStore
from ..records import Attempt, Checkpoint, Event, Job, JournalEntry, LedgerEntry
from ..fleet import QueueInfo
from ..records import BudgetCrossing, Schedule, Wait
from ..fleet import FlowLimit, FlowUsage, TypeInfo, WorkerInfo
from ..tokens import TokenInfo
from ..wakeup import Wakeup
from .batch_rows import BatchRows
from .callback_rows import CallbackRows


@dataclass(frozen=True)
class NewJob:
    """A job to insert, fully resolved (defaults applied, payload canonicalised)."""

    type: str
    payload_json: str
    project: str
    queue: str
    priority: int
    run_after: float | None
    max_attempts: int
    safe_to_retry: bool
    idempotency_key: str | None
    input_config_hash: str
    budget: Budget = field(default_factory=Budget)
    price_profile: str | None = None
    estimated_cost_usd: str | None = None
    parent_id: int | None = None
    detached: bool = False
    """A child that outlives its parent: a cancel of the parent does not cancel it."""
    trace_context: str | None = None
    """The submitter's W3C trace context (``tracing.py``), or None outside any trace."""
    version: str = ""
    """The job type's version at submit ("" unversioned): which workers claim it."""
    flow_mode: FlowMode | None = None
    """``singleton`` or ``debounce`` (``core/flowkeys.py``), or None."""
    flow_key: str | None = None
    flow_window_s: float = 0.0
    """A debounced job's window: it is held this long after the first submit of a burst."""


@dataclass(frozen=True)
class NewSchedule:
    """A schedule to store: its ticks (``cron`` in ``timezone``, already checked), what to do
    with missed ticks, and ``job``, the resolved job each tick enqueues (its idempotency key
    is set per tick; its configuration, hash and price profile are fixed here, so every
    scheduler enqueues the same job for the same tick)."""

    name: str
    cron: str
    timezone: str
    catch_up: str
    job: NewJob


@dataclass(frozen=True)
class Claim:
    """A job a worker now holds; ``attempt`` is the fencing attempt (the lease's attempt number)."""

    job: Job
    attempt: int
    started: bool = False
    """True when the claim also began the attempt (the job is ``running``)."""


@dataclass(frozen=True)
class Outcome:
    """What a worker reports at the end of an attempt."""

    state: JobState
    result_json: str | None = None
    error_code: str | None = None
    error_summary: str | None = None
    delay_s: float = 0.0
    kind: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CallReserve:
    """Reserve the worst case for call ``key`` before it is made (``Store.account``)."""

    key: str
    stage: str | None
    provider: str
    model: str
    reservation: Reservation
    request_hash: str | None = None
    fingerprint: str | None = None
    """What the call asked (``job/replay.py: call_fingerprint``), recorded with its entry."""


@dataclass(frozen=True, slots=True)
class CallSettle:
    """Record the outcome of call ``key``, reserved before by the same attempt."""

    key: str
    usage: Usage
    price: ModelPrice
    profile_id: str
    result_json: str
    refused: bool = False


AccountResult = tuple[JournalEntry | None, BaseException | None]
"""One ``Store.account`` operation's result: ``(value, error)``. A reservation's value is None,
or the journal entry of a key already done; a settlement's is None. ``error`` is what the
operation alone would have raised (it then changed nothing)."""

CallEntry = tuple[int, int, Sequence[CallReserve | CallSettle]]
"""One job's operations for ``account_many``: ``(job_id, lease attempt, ops)``."""


class SpendTotal(TypedDict):
    """One provider and model's spend (``Store.spend_totals``)."""

    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    unconfirmed_calls: int


FINISHED_COUNT_CAP = 50_000
"""Jobs of a queue in one finished state that ``queue_counts`` counts exactly; beyond it they
are estimated (PostgreSQL's planner) or counted (SQLite)."""


class EngineStats(TypedDict):
    """Totals every process agrees on (``Store.engine_stats``); ``claim_latency_seconds`` is
    ``{"count", "sum", "buckets"}`` with cumulative buckets, Prometheus style."""

    claims_total: int
    lease_expiries_total: int
    budget_pauses_total: int
    budget_thresholds_total: int
    claim_latency_seconds: dict[str, Any]


class CallerConnection(Protocol):
    """The caller's own open database connection, for ``submit(conn=...)``: a
    ``sqlite3.Connection`` on SQLite, a psycopg ``Connection`` on PostgreSQL, inside an open
    transaction that the caller commits or rolls back."""

    def commit(self) -> None: ...
    def rollback(self) -> None: ...


@dataclass(frozen=True)
class FeedEvent:
    """One event of the live feed (``Store.feed``): its job's project, the event, and its
    ``position``, which ``feed(after=...)`` resumes exactly after."""

    project: str
    event: Event
    position: str


class FinishSignal(Protocol):
    """Wakes a waiter when jobs may have reached a terminal state (``POST /jobs?wait=``)."""

    def wait(self, timeout: float) -> set[int] | None:
        """Block up to ``timeout``: the ids heard finishing, or ``None`` when any job may have
        finished (no notification channel, a reconnect that may have lost some, a timeout),
        so the caller re-reads every job it waits on."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Store(CallbackRows, WebhookStore, BatchRows, Protocol):
    url: str
    group_commit: bool
    """True where a worker's writes should share commits (one writer at a time: SQLite)."""

    # --- lifecycle
    def migrate(self) -> list[int]: ...
    def schema_version(self) -> int: ...
    def check_integrity(self) -> None: ...
    def close(self) -> None: ...
    def now(self) -> float: ...
    def transaction(self, *, savepoints: bool = True) -> AbstractContextManager[None]: ...
    def wait_for_work(self, timeout: float,
                      wake: threading.Event | Wakeup | None = None) -> bool: ...
    def finish_signal(self) -> FinishSignal: ...
    def event_signal(self) -> FinishSignal:
        """Wakes a reader of events when some may have been written (always ``None``: re-read).
        SQLite: any other connection's commit; PostgreSQL: a job queued or finished (NOTIFY),
        so other events are found by the reader's own interval."""
        ...

    # --- submission and reads
    def submit(self, jobs: Sequence[NewJob], *, conn: CallerConnection | None = None,
               profile: PriceProfile | None = None) -> list[tuple[Job, bool]]: ...
    def submit_ids(self, jobs: Sequence[NewJob], *,
                   profile: PriceProfile | None = None) -> list[int]: ...
    def ids_of_keys(self, jobs: Sequence[NewJob]) -> list[int | None]: ...
    def get_job(self, job_id: int) -> Job | None: ...
    def list_jobs(self, *, projects: Iterable[str] | None = None, state: str | None = None,
                  type: str | None = None, queue: str | None = None, search: str | None = None,
                  before_id: int | None = None, limit: int = 50) -> list[Job]: ...
    def events(self, job_id: int, *, after: int = 0, limit: int = 1000) -> list[Event]: ...
    def attempts(self, job_id: int) -> list[Attempt]: ...
    def event_seqs(self, ids: Sequence[int]) -> dict[int, int]: ...
    def feed(self, *, after: str | None = None, projects: Iterable[str] | None = None,
             limit: int = 500) -> list[FeedEvent]: ...
    def feed_head(self) -> str: ...

    # --- workers and leases
    def register_worker(self, worker: WorkerInfo) -> None: ...
    def stop_worker(self, worker_id: str) -> None: ...
    def list_workers(self, *, include_stopped: bool = False) -> list[WorkerInfo]: ...
    def serving(self, *, now: float | None = None) -> Serving: ...
    def queued_by_type(self) -> dict[tuple[str, str, str], int]: ...
    def claim(self, worker_id: str, *, queues: Sequence[str] | None, limit: int,
              lease_ttl: float, now: float | None = None, start: bool = False,
              types: Sequence[str] | None = None,
              versions: Sequence[str] | None = None, fair: bool = True) -> list[Claim]: ...
    def start(self, job_id: int, attempt: int, *, now: float | None = None) -> JobState: ...
    def heartbeat(self, worker_id: str, *, lease_ttl: float, now: float | None = None,
                  jobs: Sequence[int] | None = None) -> dict[int, tuple[int, JobState]]: ...
    def lease_state(self, job_id: int, attempt: int) -> JobState: ...
    def set_stage(self, job_id: int, attempt: int, stage: str | None) -> None: ...
    def append_event(self, job_id: int, kind: str, data: dict[str, Any], *,
                     attempt: int | None = None) -> int: ...
    def finish(self, job_id: int, attempt: int, outcome: Outcome, *,
               now: float | None = None) -> JobState: ...
    def finish_many(self, items: Sequence[tuple[int, int, Outcome]], *,
                    now: float | None = None) -> list[JobState | LeaseLost]: ...

    # --- calls, budgets, the ledger
    def account(self, job_id: int, attempt: int, ops: Sequence[CallReserve | CallSettle], *,
                now: float | None = None) -> list[AccountResult]: ...
    def account_many(self, entries: Sequence[CallEntry]) -> list[list[AccountResult]]: ...
    def reserve(self, job_id: int, attempt: int, *, key: str, stage: str | None, provider: str,
                model: str, reservation: Reservation, request_hash: str | None = None,
                now: float | None = None) -> JournalEntry | None: ...
    def settle(self, job_id: int, attempt: int, *, key: str, usage: Usage, price: ModelPrice,
               profile_id: str, result_json: str, refused: bool = False,
               now: float | None = None) -> LedgerEntry: ...
    def release(self, job_id: int, attempt: int, *, key: str, error_code: str,
                error_summary: str, billed: bool | None, now: float | None = None) -> None: ...
    def journal(self, job_id: int, key: str | None = None) -> list[JournalEntry]: ...
    def cached_result(self, project: str, request_hash: str) -> tuple[Any, Usage] | None: ...
    def record_cached(self, job_id: int, attempt: int, *, key: str, stage: str | None,
                      provider: str, model: str, request_hash: str, result_json: str,
                      usage: Usage, fingerprint: str | None = None) -> None: ...
    def add_examples(self, job_id: int, attempt: int, n: int, *,
                     now: float | None = None) -> int: ...
    def ledger(self, job_id: int) -> list[LedgerEntry]: ...
    def spend_totals(self, projects: Iterable[str] | None = None) -> list[SpendTotal]: ...
    def spent_projects(self) -> list[str]: ...
    def spend(self, query: SpendQuery) -> list[SpendRow]: ...
    def project_budget(self, project: str, *, now: float | None = None) -> BudgetStatus: ...
    def set_project_budget(self, project: str, changes: Budget, *,
                           replace: bool = False) -> BudgetStatus: ...
    def budget_crossings(self, project: str, *, scope: str | None = None,
                         key: str | None = None, limit: int = 100) -> list[BudgetCrossing]: ...
    def save_profile(self, profile: PriceProfile) -> str: ...
    def get_profile(self, profile_id: str) -> PriceProfile | None: ...

    # --- rate limits
    def acquire_rate(self, limits: Sequence[RateLimit], *, tokens: int, job_id: int, key: str,
                     now: float | None = None) -> float: ...
    def settle_rate(self, job_id: int, key: str, tokens: int | None, *,
                    headroom: Headroom | None = None, scopes: Sequence[str] = ()) -> None: ...
    def rate_calls(self, scope: str) -> list[float]: ...
    def rate_scopes(self, *, now: float | None = None) -> list[RateScope]: ...

    # --- stage checkpoints and blobs
    def put_blob(self, sha256: str, data: bytes) -> None: ...
    def get_blob(self, sha256: str) -> bytes | None: ...
    def save_checkpoint(self, job_id: int, attempt: int, *, stage: str, position: int,
                        blob: str, size: int, now: float | None = None,
                        version: str | None = None) -> Checkpoint: ...
    def get_checkpoint(self, job_id: int, stage: str) -> Checkpoint | None: ...
    def checkpoints(self, job_id: int) -> list[Checkpoint]: ...

    # replays that found a change (``job/replay.py``)
    def replay_decision(self, job_id: int) -> str | None: ...
    def patches(self, job_id: int, attempt: int) -> tuple[dict[str, bool], bool]: ...
    def change_call(self, job_id: int, attempt: int, *, key: str, decision: str,
                    fingerprint: str, differs: dict[str, Any]) -> None: ...
    def change_stage(self, job_id: int, attempt: int, *, stage: str, decision: str,
                     version: str | None, differs: dict[str, Any]) -> None: ...

    # --- maintenance (single steps of background loops)
    def expire_leases(self, *, now: float | None = None,
                      limit: int = 500) -> list[tuple[int, JobState]]: ...
    def promote_due(self, *, now: float | None = None, limit: int = 1000) -> int: ...
    def wake_due(self, *, now: float | None = None, limit: int = 500) -> int: ...
    def prune(self, *, older_than_s: float, now: float | None = None,
              batch: int | None = None) -> int: ...

    # --- waits (``waits.py``; the running job's own side is in ``job/store.py``)
    def get_wait(self, job_id: int, key: str) -> Wait | None: ...
    def begin_wait(self, job_id: int, attempt: int, spec: WaitSpec, *,
                   now: float | None = None) -> Wait: ...
    def wait_results(self, job_id: int, key: str, *, after: int = 0,
                     limit: int = 1000) -> list[dict[str, Any]]: ...
    def waits(self, job_id: int, *, projects: Iterable[str] | None = None) -> list[Wait]: ...
    def current_wait(self, job_id: int, *, projects: Iterable[str] | None = None,
                     children: bool = True) -> Wait | None: ...
    def gather_progress(self, job_id: int, key: str) -> tuple[int, int] | None: ...
    def list_waiting(self, kind: str, *, projects: Iterable[str] | None = None,
                     type: str | None = None, queue: str | None = None,
                     search: str | None = None, before_id: int | None = None,
                     limit: int = 50) -> list[Job]: ...
    def send_signal(self, job_id: int, name: str, value: Any = None, *,
                    projects: Iterable[str] | None = None) -> Job: ...

    # --- operators
    def control(self, job_id: int, action: str, *, projects: Iterable[str] | None = None,
                reason: str | None = None, on_change: str | None = None) -> Job: ...
    def set_budget(self, job_id: int, budget: Budget, *,
                   projects: Iterable[str] | None = None) -> Job: ...
    def fork(self, source_id: int, spec: NewJob, *, from_stage: str,
             declared: Sequence[str] | None = None, projects: Iterable[str] | None = None,
             profile: PriceProfile | None = None) -> tuple[Job, bool]: ...
    def retry_from(self, job_id: int, from_stage: str, *,
                   declared: Sequence[str] | None = None,
                   projects: Iterable[str] | None = None) -> Job: ...
    def list_queues(self) -> list[QueueInfo]: ...
    def queue_counts(self, *, cap: int = FINISHED_COUNT_CAP) -> list[QueueInfo]: ...
    def set_queue_paused(self, name: str, paused: bool) -> QueueInfo: ...
    def set_type_paused(self, name: str, paused: bool) -> TypeInfo: ...
    def list_types(self, *, counts: bool = True) -> list[TypeInfo]: ...
    def put_flow_limit(self, limit: FlowLimit) -> FlowLimit: ...
    def delete_flow_limit(self, scope: str, name: str) -> bool: ...
    def list_flow_limits(self) -> list[FlowLimit]: ...
    def flow_usage(self) -> list[FlowUsage]: ...
    def engine_stats(self, *, recent: int = 1000) -> EngineStats: ...
    def create_token(self, *, name: str | None, projects: Sequence[str],
                     admin: bool) -> tuple[TokenInfo, str]: ...
    def resolve_token(self, raw: str) -> TokenInfo | None: ...
    def list_tokens(self) -> list[TokenInfo]: ...
    def revoke_token(self, token_id: str) -> bool: ...

    # --- schedules
    def put_schedule(self, schedule: NewSchedule, *, projects: Iterable[str] | None = None,
                     profile: PriceProfile | None = None,
                     now: float | None = None) -> tuple[Schedule, bool]: ...
    def get_schedule(self, name: str, *,
                     projects: Iterable[str] | None = None) -> Schedule | None: ...
    def list_schedules(self, *, projects: Iterable[str] | None = None) -> list[Schedule]: ...
    def set_schedule_paused(self, name: str, paused: bool, *,
                            projects: Iterable[str] | None = None,
                            now: float | None = None) -> Schedule: ...
    def delete_schedule(self, name: str, *, projects: Iterable[str] | None = None) -> Schedule: ...
    def run_schedules(self, *, now: float | None = None, limit: int = 100,
                      max_ticks: int = 1000) -> list[Job]: ...
