"""Submission: a job's arguments resolved into the row the store inserts.

Every interface submits through the facade, so these rules hold alike for the Python library,
the CLI, REST and MCP. The resolved configuration (type, payload, project, queue, priority,
max_attempts, budget) is hashed into ``input_config_hash``, and the store compares that hash
when an idempotency key is used again: a repeat returns the existing job only if it resolves to
the same configuration — the same priority included — and raises ``IdempotencyConflict``
otherwise. ``run_after`` is a scheduling hint and not part of a job's identity."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

from .clock import to_ts
from .core import validate
from .core.budget import Budget
from .core.estimate import estimate_cost
from .core.pricing import PriceProfile
from .core.serialize import config_hash, dumps
from .errors import InvalidPayload
from .registry import JobType, Registry
from .store.base import NewJob

DEFAULT_PROJECT = "default"
DEFAULT_QUEUE = "default"


def as_budget(value: Budget | Mapping[str, Any] | None) -> Budget:
    if value is None:
        return Budget()
    if isinstance(value, Budget):
        return value
    if isinstance(value, Mapping):
        return Budget.from_dict(dict(value))
    raise InvalidPayload(f"budget must be a Budget or a mapping, got {type(value).__name__}")


checked_name = validate.name
"""A name (job type, project, queue): ``invalid_argument`` unless 1-200 printable characters."""


def resolve(registry: Registry, strict: bool, profile: PriceProfile, type: str, payload: Any,
            *, project: str = DEFAULT_PROJECT, idempotency_key: str | None = None,
            queue: str | None = None, priority: int | None = None,
            run_after: datetime | float | None = None, max_attempts: int | None = None,
            budget: Budget | Mapping[str, Any] | None = None,
            parent_id: int | None = None) -> NewJob:
    """The row for one submission: defaults from the job type (when ``strict`` or the type is
    registered), arguments checked, the payload canonicalised, the configuration hashed (the
    identity an idempotency key is compared by). ``profile`` is the price profile it pins."""
    checked_name(type, "job type")
    job_type: JobType | None = None
    if strict or type in registry:
        job_type = registry.get(type)
    project = checked_name(project, "project")
    validate.idempotency_key(idempotency_key)
    queue = checked_name(queue or (job_type.queue if job_type else DEFAULT_QUEUE), "queue")
    if priority is None:
        priority = job_type.priority if job_type else 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise InvalidPayload(f"priority must be an integer, got {priority!r}")
    if max_attempts is None:
        max_attempts = job_type.max_attempts if job_type else 3
    if not isinstance(max_attempts, int) or isinstance(max_attempts, bool) or max_attempts < 1:
        raise InvalidPayload(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
    limits = as_budget(budget)
    if job_type and job_type.budget is not None:
        limits = job_type.budget.merged(limits)
    payload_json = dumps(payload, what="payload")
    estimated = None
    if job_type is not None and job_type.estimator is not None:
        estimated = str(estimate_cost(job_type.estimator(payload), profile).cost_usd)
    resolved = {"type": type, "payload": payload, "project": project, "queue": queue,
                "priority": priority, "max_attempts": max_attempts,
                "budget": limits.to_dict()}
    try:
        run_at = to_ts(run_after)
    except (TypeError, ValueError, AttributeError):
        raise InvalidPayload(f"run_after must be a datetime or unix time, got {run_after!r}")
    return NewJob(type=type, payload_json=payload_json, project=project, queue=queue,
                  priority=priority, run_after=run_at, max_attempts=max_attempts,
                  safe_to_retry=job_type.safe_to_retry if job_type else True,
                  idempotency_key=idempotency_key, input_config_hash=config_hash(resolved),
                  budget=limits, parent_id=parent_id, price_profile=profile.id,
                  estimated_cost_usd=estimated)

