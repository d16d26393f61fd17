"""The Store protocol: everything the engine asks of durable storage, and the row types.

Every method that compares with "now" takes ``now`` (unix seconds); ``None`` means the
database's own clock, which is what production uses so that worker clocks never decide
expiry. Every write a worker makes about a job names its lease (``token``): if the job's
lease is no longer that token the write fails with ``LeaseLost`` and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, Sequence

from ..core.budget import Budget
from ..core.states import JobState
from ..records import Attempt, Event, Job, QueueInfo, WorkerInfo


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


@dataclass(frozen=True)
class Claim:
    """A job a worker now holds; ``token`` is the fencing token (the attempt number)."""

    job: Job
    token: int
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
    reservation: Any  # core.budget.Reservation
    request_hash: str | None = None


@dataclass(frozen=True, slots=True)
class CallSettle:
    """Record the outcome of call ``key``, reserved before by the same attempt."""

    key: str
    usage: Any  # core.usage.Usage
    price: Any  # core.pricing.ModelPrice
    profile_id: str
    result_json: str
    refused: bool = False


class Store(Protocol):
    url: str

    def migrate(self) -> list[int]: ...
    def close(self) -> None: ...
    def now(self) -> float: ...

    # submission and reads
    def submit(self, jobs: Sequence[NewJob], *, conn: Any = None) -> list[tuple[Job, bool]]: ...
    def get_job(self, job_id: int) -> Job | None: ...
    def list_jobs(self, *, projects: Iterable[str] | None = None, state: str | None = None,
                  type: str | None = None, queue: str | None = None, search: str | None = None,
                  before_id: int | None = None, limit: int = 50) -> list[Job]: ...
    def events(self, job_id: int, *, after: int = 0, limit: int = 1000) -> list[Event]: ...
    def attempts(self, job_id: int) -> list[Attempt]: ...

    # workers
    def register_worker(self, worker: WorkerInfo) -> None: ...
    def stop_worker(self, worker_id: str) -> None: ...
    def list_workers(self, *, include_stopped: bool = False) -> list[WorkerInfo]: ...
    def claim(self, worker_id: str, *, queues: Sequence[str] | None, limit: int,
              lease_ttl: float, now: float | None = None) -> list[Claim]: ...
    def start(self, job_id: int, token: int, *, now: float | None = None) -> JobState: ...
    def heartbeat(self, worker_id: str, *, lease_ttl: float, now: float | None = None,
                  jobs: Sequence[int] | None = None) -> dict[int, tuple[int, JobState]]: ...
    def lease_state(self, job_id: int, token: int) -> JobState: ...
    def set_stage(self, job_id: int, token: int, stage: str | None) -> None: ...
    def finish(self, job_id: int, token: int, outcome: Outcome,
               *, now: float | None = None) -> JobState: ...
    def append_event(self, job_id: int, kind: str, data: dict[str, Any], *,
                     token: int | None = None) -> int: ...

    # maintenance (single steps of background loops)
    def expire_leases(self, *, now: float | None = None, limit: int = 500) -> list[tuple[int, JobState]]: ...
    def promote_due(self, *, now: float | None = None, limit: int = 1000) -> int: ...
    def prune(self, *, older_than_s: float, now: float | None = None) -> int: ...

    # operators
    def control(self, job_id: int, action: str, *, projects: Iterable[str] | None = None,
                reason: str | None = None) -> Job: ...
    def set_budget(self, job_id: int, budget: Budget, *,
                   projects: Iterable[str] | None = None) -> Job: ...
    def list_queues(self) -> list[QueueInfo]: ...
    def set_queue_paused(self, name: str, paused: bool) -> QueueInfo: ...


def open_store(url: str, **options: Any) -> Store:
    """A store for ``url``: ``sqlite:///path`` (default) or ``postgresql://...``."""
    if url.startswith("sqlite:") or "://" not in url:
        from .sqlite.store import SQLiteStore
        return SQLiteStore(url, **options)
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        try:
            from .postgres.store import PostgresStore
        except ImportError as exc:  # pragma: no cover - the backend ships with tether
            from ..errors import ConfigurationError
            raise ConfigurationError(f"PostgreSQL backend unavailable: {exc}") from exc
        return PostgresStore(url, **options)
    from ..errors import ConfigurationError
    raise ConfigurationError(f"unsupported database URL {url!r}; use sqlite:/// or postgresql://")
