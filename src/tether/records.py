"""The records tether hands out: a job, its events and its attempts. Frozen, so a read is a
snapshot."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from .core.budget import BudgetStatus
from .core.flowkeys import FlowMode
from .core.states import TERMINAL, JobState


@dataclass(frozen=True)
class Job:
    id: int
    type: str
    project: str
    queue: str
    state: JobState
    stage: str | None
    attempt_count: int
    max_attempts: int
    idempotency_key: str | None
    input_config_hash: str
    priority: int
    run_after: datetime
    error_code: str | None
    error_summary: str | None
    result: Any
    budget: BudgetStatus
    lease_owner: str | None
    lease_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    payload: Any = None
    safe_to_retry: bool = True
    lease_attempt: int | None = None
    finished_at: datetime | None = None
    price_profile: str | None = None
    estimated_cost_usd: Decimal | None = None
    parent_id: int | None = None
    trace_context: str | None = None
    """The submitter's W3C trace context, which the job's attempt spans are parented under
    (``tracing.py``); None when it was submitted outside any trace."""
    version: str = ""
    """The job type's version when it was submitted ("" unversioned): only a worker whose
    code serves that version claims it (``core/serving.py``)."""
    flow_mode: FlowMode | None = None
    """``singleton`` (one live job per key) or ``debounce`` (one pending job per key, whose
    payload later submits replace), or None (``core/flowkeys.py``)."""
    flow_key: str | None = None
    """The key ``flow_mode`` counts jobs by, within the job's type and project ("" for the
    type as a whole)."""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["state"] = str(self.state)
        out["budget"] = self.budget.to_dict()
        for k in ("run_after", "lease_expires_at", "created_at", "updated_at", "finished_at"):
            out[k] = out[k].isoformat() if out[k] is not None else None
        if self.estimated_cost_usd is not None:
            out["estimated_cost_usd"] = str(self.estimated_cost_usd)
        return out


@dataclass(frozen=True)
class Event:
    """One entry of a job's append-only log; ``seq`` is gap-free per job, starting at 1."""

    job_id: int
    seq: int
    at: datetime
    kind: str
    from_state: str | None
    to_state: str | None
    attempt: int | None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["at"] = self.at.isoformat()
        return out


@dataclass(frozen=True)
class Attempt:
    """One claim of a job by a worker; ``attempt`` is also the attempt that fences its lease."""

    job_id: int
    attempt: int
    worker_id: str
    claimed_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    outcome: str | None
    error_code: str | None
    error_summary: str | None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("claimed_at", "started_at", "finished_at"):
            out[k] = out[k].isoformat() if out[k] is not None else None
        return out


@dataclass(frozen=True)
class JournalEntry:
    """One ``ctx.call`` key: reserved, done (with its result), failed or unconfirmed."""

    job_id: int
    key: str
    stage: str | None
    status: str
    attempt: int
    provider: str
    model: str
    reserved_usd: Decimal
    result: Any
    usage: dict[str, int] | None
    cost_usd: Decimal | None
    error_code: str | None
    created_at: datetime
    updated_at: datetime
    request_hash: str | None = None
    reused_from: int | None = None
    fingerprint: str | None = None
    """What the call asked (``job/replay.py``); None for entries written before fingerprints."""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["reserved_usd"] = str(self.reserved_usd)
        out["cost_usd"] = None if self.cost_usd is None else str(self.cost_usd)
        out["created_at"] = self.created_at.isoformat()
        out["updated_at"] = self.updated_at.isoformat()
        return out


@dataclass(frozen=True)
class LedgerEntry:
    """One settled call: what was paid, at which unit prices, from which price profile.
    ``confirmed`` is False when a crash left the outcome unknown and the reservation was
    counted as spent. ``cache_write_tokens`` (of which ``cache_write_1h_tokens`` with a 1-hour
    lifetime) are input tokens written to the provider's prompt cache, billed at
    ``cache_write_per_mtok`` / ``cache_write_1h_per_mtok`` (None: the profile lists no such
    rate, so they were billed as input). A row with ``reused_from`` is a call a fork carried
    over from that job (the one that paid for it): it costs 0 here, and ``reused_cost_usd`` is
    what it cost there, for information only (never counted again)."""

    id: int
    job_id: int
    project: str
    stage: str | None
    key: str
    attempt: int
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    reasoning_tokens: int
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cached_input_per_mtok: Decimal | None
    price_profile: str
    cost_usd: Decimal
    reserved_usd: Decimal
    confirmed: bool
    overrun: bool
    created_at: datetime
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_write_per_mtok: Decimal | None = None
    cache_write_1h_per_mtok: Decimal | None = None
    reused_from: int | None = None
    reused_cost_usd: Decimal | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k, v in out.items():
            if isinstance(v, Decimal):
                out[k] = str(v)
        out["created_at"] = self.created_at.isoformat()
        return out


@dataclass(frozen=True)
class Checkpoint:
    """A finished stage: its output is the blob ``blob`` (sha256), durable before this row."""

    job_id: int
    stage: str
    position: int
    blob: str
    size: int
    attempt: int
    created_at: datetime
    reused_from: int | None = None
    version: str | None = None
    """The version of the stage that wrote it (``ctx.stage(..., version=)``)."""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["created_at"] = self.created_at.isoformat()
        return out


@dataclass(frozen=True)
class Wait:
    """One wait of a job (``gather``, ``sleep``, ``wait_for_signal``): what it waits for,
    and once ``done``, how it ended (``outcome``) and the value its replay receives."""

    job_id: int
    key: str
    kind: str
    status: str
    attempt: int
    created_at: datetime
    wake_at: datetime | None = None
    children: tuple[int, ...] = ()
    fail_mode: str | None = None
    signal: str | None = None
    prompt: str | None = None
    schema: Any = None
    outcome: str | None = None
    value: Any = None
    done_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.status == "done"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["children"] = list(self.children)
        for k in ("created_at", "wake_at", "done_at"):
            out[k] = out[k].isoformat() if out[k] is not None else None
        return out


@dataclass(frozen=True)
class Schedule:
    """A durable schedule: each tick of ``cron`` in ``timezone`` enqueues one job of ``type``
    (identity ``schedule:<name>:<tick as UTC>``). ``next_run_at`` is the next tick a scheduler
    will enqueue, None while paused (a paused schedule enqueues nothing; resuming starts from
    the first tick after the resume)."""

    name: str
    cron: str
    timezone: str
    catch_up: str
    type: str
    project: str
    queue: str
    payload: Any
    budget: dict[str, Any]
    priority: int
    max_attempts: int
    paused: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    last_job_id: int | None
    created_at: datetime
    updated_at: datetime

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("next_run_at", "last_run_at", "created_at", "updated_at"):
            out[k] = out[k].isoformat() if out[k] is not None else None
        return out


@dataclass(frozen=True)
class ProviderBatch:
    """One provider batch of a job (``ctx.batch``): its items and their reservations, the
    provider's batch id once known, and after settlement each item's outcome. Money: what
    was reserved at the batch price, what settled, and what the same usage would have cost
    at the standard price (``standard_usd``)."""

    job_id: int
    key: str
    provider: str
    model: str
    status: str
    attempt: int
    tether_key: str
    items: list[dict[str, Any]]
    price: dict[str, Any]
    standard_price: dict[str, Any]
    price_profile: str
    reserved_usd: Decimal
    items_total: int
    created_at: datetime
    stage: str | None = None
    remote_id: str | None = None
    remote_status: str | None = None
    settled_usd: Decimal | None = None
    standard_usd: Decimal | None = None
    items_done: int = 0
    items_failed: int = 0
    polls: int = 0
    next_poll_at: datetime | None = None
    error: str | None = None
    settled_at: datetime | None = None

    @property
    def settled(self) -> bool:
        return self.status in ("settled", "unconfirmed")

    def to_dict(self) -> dict[str, Any]:
        """As status pages, REST and MCP show it (without the items' answers)."""
        return {"key": self.key, "provider": self.provider, "model": self.model,
                "status": self.status, "remote_id": self.remote_id,
                "remote_status": self.remote_status, "items_total": self.items_total,
                "items_done": self.items_done, "items_failed": self.items_failed,
                "reserved_usd": str(self.reserved_usd),
                "settled_usd": None if self.settled_usd is None else str(self.settled_usd),
                "standard_usd": None if self.standard_usd is None else str(self.standard_usd),
                "polls": self.polls, "error": self.error,
                "created_at": self.created_at.isoformat(),
                "settled_at": self.settled_at.isoformat() if self.settled_at else None}


@dataclass(frozen=True)
class BudgetCrossing:
    """A budget threshold crossed (``store/thresholds.py``): of the ``scope`` budget named
    ``budget`` (a job id, or the project), its ``limit_name`` limit (``metric`` cost, calls or
    tokens) of value ``limit``, by the settled use ``used`` (decimal text), recorded once, in
    the period starting ``period_start`` for a periodic budget; ``job_id``: the job whose call
    crossed it (its ``budget_threshold`` event)."""

    scope: str
    budget: str
    project: str
    metric: str
    limit_name: str
    threshold: float
    limit: str
    used: str
    period: str | None
    period_start: float | None
    job_id: int
    crossed_at: datetime

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["crossed_at"] = self.crossed_at.isoformat()
        return out
