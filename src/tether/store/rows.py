"""Rows to records: how every SQL backend's rows become tether's frozen records.

Backends may return times as unix seconds (SQLite) or datetimes (PostgreSQL), JSON as text,
money as text or Decimal; these helpers accept either, so the shared logic sees one shape.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal
from functools import lru_cache
from typing import Any

from ..core.budget import COUNTER_FIELDS, Budget, BudgetStatus, Counters
from ..core.states import JobState
from ..records import Attempt, Checkpoint, Event, Job, JournalEntry, LedgerEntry
from ..tokens import TokenInfo

_D0 = Decimal(0)
_UTC = timezone.utc


def _ts(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)


def _dt(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromtimestamp(float(value), _UTC)


def _json(value: Any) -> Any:
    if value is None or not isinstance(value, (str, bytes)):
        return value
    return json.loads(value)


def _dec(value: Any) -> Decimal:
    return _D0 if value is None else Decimal(str(value))


def _rate(row: dict[str, Any], name: str) -> Decimal | None:
    """An optional price column: None where the profile listed no such rate."""
    value = row.get(name)
    return None if value is None else Decimal(str(value))


_ZERO = Counters()
_NO_LIMITS = Budget()
_UNLIMITED = BudgetStatus(_NO_LIMITS, _ZERO)


@lru_cache(maxsize=1024)
def _limits(text: str) -> Budget:
    """A budget column's limits. Jobs of one kind share a few distinct budgets, and every claim
    builds a Job, so parsing each distinct text once matters; Budget is frozen."""
    return Budget.from_dict(json.loads(text) or {})


class RowsMixin:
    """Row conversion shared by every SQL backend."""

    def _counters(self, row: dict[str, Any]) -> Counters:
        if "calls" not in row:  # a row read without the budget join (claims)
            return _ZERO
        values = {k: row.get(k) for k in COUNTER_FIELDS}
        if not any(values.values()):
            return _ZERO
        return Counters.from_dict(values)

    def _budget_status(self, row: dict[str, Any]) -> BudgetStatus:
        raw = row.get("budget")
        if isinstance(raw, (str, bytes)):
            limits = _limits(raw if isinstance(raw, str) else raw.decode())
        else:
            limits = Budget.from_dict(raw or {})
        used = self._counters(row)
        if used is _ZERO and limits == _NO_LIMITS:
            return _UNLIMITED
        return BudgetStatus(limits, used)

    def _job(self, row: dict[str, Any]) -> Job:
        est = row.get("estimated_cost_usd")
        return Job(
            id=int(row["id"]), type=row["type"], project=row["project"], queue=row["queue"],
            state=JobState(row["state"]), stage=row.get("stage"),
            attempt_count=int(row["attempt_count"]), max_attempts=int(row["max_attempts"]),
            idempotency_key=row.get("idempotency_key"),
            input_config_hash=row["input_config_hash"], priority=int(row["priority"]),
            run_after=_dt(row["run_after"]), error_code=row.get("error_code"),
            error_summary=row.get("error_summary"), result=_json(row.get("result")),
            budget=self._budget_status(row),
            lease_owner=row.get("lease_owner"), lease_expires_at=_dt(row.get("lease_expires_at")),
            created_at=_dt(row["created_at"]), updated_at=_dt(row["updated_at"]),
            payload=_json(row.get("payload")), safe_to_retry=bool(row["safe_to_retry"]),
            lease_token=row.get("lease_token"), finished_at=_dt(row.get("finished_at")),
            price_profile=row.get("price_profile"),
            estimated_cost_usd=Decimal(str(est)) if est is not None else None,
            parent_id=row.get("parent_id"),
        )

    def _event(self, row: dict[str, Any]) -> Event:
        return Event(job_id=int(row["job_id"]), seq=int(row["seq"]), at=_dt(row["at"]),
                     kind=row["kind"], from_state=row.get("from_state"),
                     to_state=row.get("to_state"), attempt=row.get("attempt"),
                     data=_json(row.get("data")) or {})

    def _attempt(self, row: dict[str, Any]) -> Attempt:
        return Attempt(job_id=int(row["job_id"]), attempt=int(row["attempt"]),
                       worker_id=row["worker_id"], claimed_at=_dt(row["claimed_at"]),
                       started_at=_dt(row.get("started_at")),
                       finished_at=_dt(row.get("finished_at")), outcome=row.get("outcome"),
                       error_code=row.get("error_code"), error_summary=row.get("error_summary"))

    def _token(self, row: dict[str, Any]) -> TokenInfo:
        return TokenInfo(id=row["id"], name=row.get("name"),
                         projects=tuple(_json(row["projects"]) or ()), admin=bool(row["admin"]),
                         created_at=_dt(row["created_at"]), revoked_at=_dt(row.get("revoked_at")))

    @staticmethod
    def _load_json(value: Any) -> Any:
        if value is None or not isinstance(value, (str, bytes)):
            return value
        return json.loads(value)

    def _journal(self, r: dict[str, Any]) -> JournalEntry:
        return JournalEntry(
            job_id=int(r["job_id"]), key=r["key"], stage=r.get("stage"), status=r["status"],
            attempt=int(r["attempt"]), provider=r["provider"], model=r["model"],
            reserved_usd=_dec(r["reserved_usd"]), result=self._load_json(r.get("result")),
            usage=self._load_json(r.get("usage")),
            cost_usd=None if r.get("cost_usd") is None else _dec(r["cost_usd"]),
            error_code=r.get("error_code"), created_at=_dt(r["created_at"]),
            updated_at=_dt(r["updated_at"]), request_hash=r.get("request_hash"))

    def _ledger(self, r: dict[str, Any]) -> LedgerEntry:
        return LedgerEntry(
            id=int(r["id"]), job_id=int(r["job_id"]), project=r["project"], stage=r.get("stage"),
            key=r["key"], attempt=int(r["attempt"]), provider=r["provider"], model=r["model"],
            input_tokens=int(r["input_tokens"]), output_tokens=int(r["output_tokens"]),
            cached_input_tokens=int(r["cached_input_tokens"]),
            reasoning_tokens=int(r["reasoning_tokens"]),
            cache_write_tokens=int(r["cache_write_tokens"]),
            cache_write_1h_tokens=int(r["cache_write_1h_tokens"]),
            input_per_mtok=_dec(r["input_per_mtok"]), output_per_mtok=_dec(r["output_per_mtok"]),
            cached_input_per_mtok=_rate(r, "cached_input_per_mtok"),
            cache_write_per_mtok=_rate(r, "cache_write_per_mtok"),
            cache_write_1h_per_mtok=_rate(r, "cache_write_1h_per_mtok"),
            price_profile=r["price_profile"], cost_usd=_dec(r["cost_usd"]),
            reserved_usd=_dec(r["reserved_usd"]), confirmed=bool(r["confirmed"]),
            overrun=bool(r["overrun"]), created_at=_dt(r["created_at"]))

    def _checkpoint(self, r: dict[str, Any]) -> Checkpoint:
        return Checkpoint(job_id=int(r["job_id"]), stage=r["stage"], position=int(r["position"]),
                          blob=r["blob"], size=int(r["size"]), attempt=int(r["attempt"]),
                          created_at=_dt(r["created_at"]))
