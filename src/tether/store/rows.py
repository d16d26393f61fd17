"""Rows to records: how every SQL backend's rows become tether's frozen records.

Backends may return times as unix seconds (SQLite) or datetimes (PostgreSQL), JSON as text,
money as text or Decimal; these helpers accept either, so the shared logic sees one shape.
"""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import datetime, UTC
from decimal import Decimal
from functools import lru_cache
from typing import Any, TypeVar, overload

from ..core.budget import COUNTER_FIELDS, Budget, BudgetStatus, Counters
from ..core.states import JobState
from ..records import Attempt, Checkpoint, Event, Job, JournalEntry, LedgerEntry, Wait
from ..tokens import TokenInfo
from .base import NewJob
from .tx import Row

_D0 = Decimal(0)
_R = TypeVar("_R")
_UTC = UTC


@overload
def as_seconds(value: datetime | float | str | Decimal) -> float: ...
@overload
def as_seconds(value: None) -> None: ...
def as_seconds(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)


@overload
def as_datetime(value: datetime | float | str | Decimal) -> datetime: ...
@overload
def as_datetime(value: None) -> None: ...
def as_datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromtimestamp(float(value), _UTC)


def load_json(value: Any) -> Any:
    if value is None or not isinstance(value, (str, bytes)):
        return value
    if value == "null":  # most payloads and results: no decoder call
        return None
    return json.loads(value)


def as_decimal(value: Any) -> Decimal:
    return _D0 if value is None else Decimal(str(value))


def _rate(row: Row, name: str) -> Decimal | None:
    """An optional price column: None where the profile listed no such rate."""
    value = row.get(name)
    return None if value is None else Decimal(str(value))


_ZERO = Counters()
_NO_LIMITS = Budget()
_UNLIMITED = BudgetStatus(_NO_LIMITS, _ZERO)


def limits_of(raw: Any) -> Budget:
    """A budget column's limits (JSON text, bytes or an already decoded dict)."""
    if isinstance(raw, bytes):
        raw = raw.decode()
    if isinstance(raw, str):
        return _parsed_limits(raw)
    return Budget.from_dict(raw or {})


@lru_cache(maxsize=1024)
def _parsed_limits(text: str) -> Budget:
    """Jobs of one kind share a few distinct budgets, and every claim builds a Job, so each
    distinct text is parsed once (Budget is frozen)."""
    return Budget.from_dict(json.loads(text) or {})


def counters_of(row: Row) -> Counters:
    if "calls" not in row:  # a row read without the budget join (claims)
        return _ZERO
    values = {k: row.get(k) for k in COUNTER_FIELDS}
    if not any(values.values()):
        return _ZERO
    return Counters.from_dict(values)


def _budget_status(row: Row) -> BudgetStatus:
    limits = limits_of(row.get("budget"))
    used = counters_of(row)
    if used is _ZERO and limits == _NO_LIMITS:
        return _UNLIMITED
    return BudgetStatus(limits, used)


_JOB_FIELDS = frozenset(f.name for f in fields(Job))


def _frozen_job(values: dict[str, Any]) -> Job:
    """The ``Job`` whose fields are ``values`` (every field, nothing else), made without its
    generated ``__init__``: a frozen dataclass sets each of its 30 fields through
    ``object.__setattr__``, which made that call half the cost of turning a claimed row into
    a job. The record is the same (same fields, equality, ``replace``)."""
    job = object.__new__(Job)
    job.__dict__.update(values)
    return job


def to_job(row: Row) -> Job:
    est = row.get("estimated_cost_usd")
    return _frozen_job({
        "id": int(row["id"]), "type": row["type"], "project": row["project"],
        "queue": row["queue"], "state": JobState(row["state"]), "stage": row.get("stage"),
        "attempt_count": int(row["attempt_count"]), "max_attempts": int(row["max_attempts"]),
        "idempotency_key": row.get("idempotency_key"),
        "input_config_hash": row["input_config_hash"], "priority": int(row["priority"]),
        "run_after": as_datetime(row["run_after"]), "error_code": row.get("error_code"),
        "error_summary": row.get("error_summary"), "result": load_json(row.get("result")),
        "budget": _budget_status(row),
        "lease_owner": row.get("lease_owner"),
        "lease_expires_at": as_datetime(row.get("lease_expires_at")),
        "created_at": as_datetime(row["created_at"]),
        "updated_at": as_datetime(row["updated_at"]),
        "payload": load_json(row.get("payload")), "safe_to_retry": bool(row["safe_to_retry"]),
        "lease_attempt": row.get("lease_attempt"),
        "finished_at": as_datetime(row.get("finished_at")),
        "price_profile": row.get("price_profile"),
        "estimated_cost_usd": Decimal(str(est)) if est is not None else None,
        "parent_id": row.get("parent_id"), "trace_context": row.get("trace_context"),
        "version": row.get("version") or "",
        "flow_mode": row.get("flow_mode"), "flow_key": row.get("flow_key"),
    })


def fresh_budget(limits: Budget) -> BudgetStatus:
    """A new job's budget as ``get_job`` reads it: its limits, nothing used yet."""
    if limits is _NO_LIMITS or limits == _NO_LIMITS:
        return _UNLIMITED
    return BudgetStatus(limits, _ZERO)


def record(cls: type[_R], values: dict[str, Any]) -> _R:
    """The frozen dataclass ``cls`` holding ``values``, which name every one of its fields:
    equal to ``cls(**values)``, made without the ``object.__setattr__`` call per field its
    generated ``__init__`` makes (most of what building a record costs, where a bulk submit
    builds thousands). Only for plain dataclasses: no ``__post_init__``, no slots."""
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


def new_job(spec: NewJob, id: int, created_at: datetime, run_after: datetime,
            payload: Any) -> Job:
    """The job a submit just inserted, from its spec and the values the database chose:
    field for field what ``to_job`` makes of the row ``get_job`` reads."""
    est = spec.estimated_cost_usd
    return record(Job, {
        "id": id, "type": spec.type, "project": spec.project, "queue": spec.queue,
        "state": JobState.QUEUED, "stage": None, "attempt_count": 0,
        "max_attempts": int(spec.max_attempts), "idempotency_key": spec.idempotency_key,
        "input_config_hash": spec.input_config_hash, "priority": int(spec.priority),
        "run_after": run_after, "error_code": None, "error_summary": None, "result": None,
        "budget": fresh_budget(spec.budget), "lease_owner": None, "lease_expires_at": None,
        "created_at": created_at, "updated_at": created_at, "payload": payload,
        "safe_to_retry": bool(spec.safe_to_retry), "lease_attempt": None, "finished_at": None,
        "price_profile": spec.price_profile,
        "estimated_cost_usd": Decimal(est) if est is not None else None,
        "parent_id": spec.parent_id, "trace_context": spec.trace_context,
        "version": spec.version, "flow_mode": spec.flow_mode, "flow_key": spec.flow_key})


def to_event(row: Row) -> Event:
    return Event(job_id=int(row["job_id"]), seq=int(row["seq"]), at=as_datetime(row["at"]),
                 kind=row["kind"], from_state=row.get("from_state"),
                 to_state=row.get("to_state"), attempt=row.get("attempt"),
                 data=load_json(row.get("data")) or {})


def to_attempt(row: Row) -> Attempt:
    return Attempt(job_id=int(row["job_id"]), attempt=int(row["attempt"]),
                   worker_id=row["worker_id"], claimed_at=as_datetime(row["claimed_at"]),
                   started_at=as_datetime(row.get("started_at")),
                   finished_at=as_datetime(row.get("finished_at")), outcome=row.get("outcome"),
                   error_code=row.get("error_code"), error_summary=row.get("error_summary"))


def to_token(row: Row) -> TokenInfo:
    return TokenInfo(id=row["id"], name=row.get("name"),
                     projects=tuple(load_json(row["projects"]) or ()), admin=bool(row["admin"]),
                     created_at=as_datetime(row["created_at"]),
                     revoked_at=as_datetime(row.get("revoked_at")))


def to_journal(r: Row) -> JournalEntry:
    return JournalEntry(
        job_id=int(r["job_id"]), key=r["key"], stage=r.get("stage"), status=r["status"],
        attempt=int(r["attempt"]), provider=r["provider"], model=r["model"],
        reserved_usd=as_decimal(r["reserved_usd"]), result=load_json(r.get("result")),
        usage=load_json(r.get("usage")),
        cost_usd=None if r.get("cost_usd") is None else as_decimal(r["cost_usd"]),
        error_code=r.get("error_code"), created_at=as_datetime(r["created_at"]),
        updated_at=as_datetime(r["updated_at"]), request_hash=r.get("request_hash"),
        reused_from=_opt_int(r.get("reused_from")), fingerprint=r.get("fingerprint"))


def to_ledger(r: Row) -> LedgerEntry:
    return LedgerEntry(
        id=int(r["id"]), job_id=int(r["job_id"]), project=r["project"], stage=r.get("stage"),
        key=r["key"], attempt=int(r["attempt"]), provider=r["provider"], model=r["model"],
        input_tokens=int(r["input_tokens"]), output_tokens=int(r["output_tokens"]),
        cached_input_tokens=int(r["cached_input_tokens"]),
        reasoning_tokens=int(r["reasoning_tokens"]),
        cache_write_tokens=int(r["cache_write_tokens"]),
        cache_write_1h_tokens=int(r["cache_write_1h_tokens"]),
        input_per_mtok=as_decimal(r["input_per_mtok"]),
        output_per_mtok=as_decimal(r["output_per_mtok"]),
        cached_input_per_mtok=_rate(r, "cached_input_per_mtok"),
        cache_write_per_mtok=_rate(r, "cache_write_per_mtok"),
        cache_write_1h_per_mtok=_rate(r, "cache_write_1h_per_mtok"),
        price_profile=r["price_profile"], cost_usd=as_decimal(r["cost_usd"]),
        reserved_usd=as_decimal(r["reserved_usd"]), confirmed=bool(r["confirmed"]),
        overrun=bool(r["overrun"]), created_at=as_datetime(r["created_at"]),
        reused_from=_opt_int(r.get("reused_from")),
        reused_cost_usd=_rate(r, "reused_cost_usd"))


def to_checkpoint(r: Row) -> Checkpoint:
    return Checkpoint(job_id=int(r["job_id"]), stage=r["stage"], position=int(r["position"]),
                      blob=r["blob"], size=int(r["size"]), attempt=int(r["attempt"]),
                      created_at=as_datetime(r["created_at"]),
                      reused_from=_opt_int(r.get("reused_from")), version=r.get("version"))


def to_wait(r: Row, children: tuple[int, ...] = ()) -> Wait:
    """A ``job_waits`` row; a gather's ``children`` are rows of their own, given apart."""
    return Wait(job_id=int(r["job_id"]), key=r["key"], kind=r["kind"], status=r["status"],
                attempt=int(r["attempt"]), created_at=as_datetime(r["created_at"]),
                wake_at=as_datetime(r.get("wake_at")),
                children=children,
                fail_mode=r.get("fail_mode"), signal=r.get("signal"), prompt=r.get("prompt"),
                schema=load_json(r.get("schema")), outcome=r.get("outcome"),
                value=load_json(r.get("value")), done_at=as_datetime(r.get("done_at")))


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
