"""Submission: a job's arguments resolved into the row the store inserts.

Every interface submits through the facade, so these rules hold alike for the Python library,
the CLI, REST and MCP. The resolved configuration (type, payload, project, queue, priority,
max_attempts, budget) is hashed into ``input_config_hash``, and the store compares that hash
when an idempotency key is used again: a repeat returns the existing job only if it resolves to
the same configuration — the same priority included — and raises ``IdempotencyConflict``
otherwise. ``run_after`` is a scheduling hint and not part of a job's identity.

A ``Resolver`` serves one submission. What the jobs of a batch share is worked out once per
batch: the options other than payload, key and start time are checked and resolved once per
distinct combination of them (a shape, with the canonical text of its configuration around the
payload), so a large ``submit_many`` costs one payload encoding and one hash per job; the
result is exactly what resolving each job alone gives, the same ``input_config_hash`` and the
same first error included."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any
from collections.abc import Iterable, Mapping

from .clock import to_ts
from .core import validate
from .core.budget import Budget
from .core.estimate import estimate_cost
from .core.flowkeys import resolve as resolve_flow
from .core.pricing import PriceProfile
from .core.serialize import MAX_PAYLOAD_BYTES, config_hash, dumps
from .errors import InvalidPayload
from .registry import JobType, Registry
from .store.base import NewJob
from .store.rows import record
from .tracing import submit_context

DEFAULT_PROJECT = "default"
DEFAULT_QUEUE = "default"
_NO_LIMITS = Budget()


def job_limits(limits: Budget) -> Budget:
    """``limits`` as a job's: periods count a project's spend per day, week or month, and a
    job has no calendar of its own."""
    if limits.period is not None or limits.timezone is not None \
            or limits.period_resume is not None:
        raise InvalidPayload("period, timezone and period_resume apply to project budgets "
                             "(set_project_budget), not to a job's")
    return limits


def as_budget(value: Budget | Mapping[str, Any] | None) -> Budget:
    if value is None:
        return _NO_LIMITS
    if isinstance(value, Budget):
        return value
    if isinstance(value, Mapping):
        return Budget.from_dict(dict(value))
    raise InvalidPayload(f"budget must be a Budget or a mapping, got {type(value).__name__}")


_Shape = tuple[JobType | None, str, int, int, Budget, str, str]
"""A resolved shape: job type, queue, priority, max_attempts, limits, and the canonical text
of the configuration before and after its payload."""

checked_name = validate.name
"""A name (job type, project, queue): ``invalid_argument`` unless 1-200 printable characters."""


class Resolver:
    """Resolves the jobs of one submission against ``registry`` and the price ``profile``
    they pin; ``strict``: an unregistered type is refused (``UnknownJobType``)."""

    def __init__(self, registry: Registry, profile: PriceProfile, *, strict: bool) -> None:
        self.registry = registry
        self.profile = profile
        self.strict = strict
        self._types: dict[str, JobType | None] = {}
        self._names: set[str] = set()
        self._texts: dict[Any, str] = {}
        self._shapes: dict[tuple, _Shape] = {}
        self._trace: str | bool | None = False

    def trace_context(self, type: str) -> str | None:
        """The trace context this submission's jobs carry (``tracing.py``): the span current
        when it is made, read once per submission (outside any span, with tracing on, a batch
        shares one root ``tether.submit`` span)."""
        if self._trace is False:
            self._trace = submit_context(type)
        return self._trace  # type: ignore[return-value]

    def many(self, items: Iterable[Mapping[str, Any]]) -> list[NewJob]:
        """``submit_many``'s items: mappings of ``submit``'s arguments."""
        out = []
        for item in items:
            item = dict(item)
            out.append(self.one(item.pop("type"), item.pop("payload", None), **item))
        return out

    def one(self, type: str, payload: Any, *, project: str = DEFAULT_PROJECT,
            idempotency_key: str | None = None, queue: str | None = None,
            priority: int | None = None, run_after: datetime | float | None = None,
            max_attempts: int | None = None, budget: Budget | Mapping[str, Any] | None = None,
            parent_id: int | None = None, detached: bool = False,
            singleton: bool | None = None, debounce_s: float | None = None,
            flow_key: str | None = None, flow_control: bool = True) -> NewJob:
        """One job's row. ``flow_control=False``: no singleton or debounce key, whatever the
        type declares (a fork, a schedule's tick: docs/flow-control.md)."""
        key = None
        if (type.__class__ is str and project.__class__ is str
                and (queue is None or queue.__class__ is str)
                and (priority is None or priority.__class__ is int)
                and (max_attempts is None or max_attempts.__class__ is int)
                and (budget is None or budget.__class__ is Budget)):
            key = (type, project, queue, priority, max_attempts, budget)
        shape = self._shapes.get(key) if key is not None else None
        if shape is None:
            shape = self._shape(type, project, idempotency_key, queue, priority, max_attempts,
                                budget)
            if key is not None:
                self._shapes[key] = shape
        else:
            validate.idempotency_key(idempotency_key)
        job_type, queue, priority, max_attempts, limits, head, tail = shape
        payload_json = "null" if payload is None else dumps(payload, what="payload")
        estimated = None
        if job_type is not None and job_type.estimator is not None:
            estimated = str(estimate_cost(job_type.estimator(payload), self.profile).cost_usd)
        text = head + payload_json + tail
        if len(text) * 4 > MAX_PAYLOAD_BYTES:  # near the size limit: the full check decides
            digest = config_hash({"type": type, "payload": payload, "project": project,
                                  "queue": queue, "priority": priority,
                                  "max_attempts": max_attempts, "budget": limits.to_dict()})
        else:
            digest = hashlib.sha256(text.encode()).hexdigest()
        try:
            run_at = to_ts(run_after)
        except (TypeError, ValueError, AttributeError):
            raise InvalidPayload(
                "run_after must be a datetime or unix time in the years 1 to 9999, got "
                f"{run_after!r:.60}") from None
        flow = None
        if flow_control and (singleton is not None or debounce_s is not None
                             or flow_key is not None
                             or (job_type is not None and job_type.flow is not None)):
            flow = resolve_flow(job_type.flow if job_type else None, payload, key=flow_key,
                                singleton=singleton, debounce_s=debounce_s)
        return record(NewJob, {
            "type": type, "payload_json": payload_json, "project": project, "queue": queue,
            "priority": priority, "run_after": run_at, "max_attempts": max_attempts,
            "safe_to_retry": job_type.safe_to_retry if job_type else True,
            "idempotency_key": idempotency_key, "input_config_hash": digest, "budget": limits,
            "parent_id": parent_id, "detached": bool(detached),
            "price_profile": self.profile.id, "estimated_cost_usd": estimated,
            "trace_context": self.trace_context(type),
            "version": job_type.version if job_type else "",
            "flow_mode": flow.mode if flow else None, "flow_key": flow.key if flow else None,
            "flow_window_s": flow.window_s if flow else 0.0})

    def _shape(self, type: str, project: str, idempotency_key: str | None, queue: str | None,
               priority: int | None, max_attempts: int | None,
               budget: Budget | Mapping[str, Any] | None) -> _Shape:
        """What a job's options other than its payload, key and start resolve to (checked in
        the order errors are reported; the key is checked here only to keep that order), and
        its configuration's canonical text around the payload, keys in sorted order."""
        self._name(type, "job type")
        job_type = self._job_type(type)
        self._name(project, "project")
        validate.idempotency_key(idempotency_key)
        queue = self._name(queue or (job_type.queue if job_type else DEFAULT_QUEUE), "queue")
        if priority is None:
            priority = job_type.priority if job_type else 0
        if max_attempts is None:
            max_attempts = job_type.max_attempts if job_type else 3
        priority = validate.priority(priority)
        max_attempts = validate.max_attempts(max_attempts)
        limits = job_limits(as_budget(budget))
        if job_type and job_type.budget is not None:
            limits = job_limits(job_type.budget).merged(limits)
        head = (f'{{"budget":{self._text(limits)},"max_attempts":{int(max_attempts)!r},'
                f'"payload":')
        tail = (f',"priority":{int(priority)!r},"project":{self._text(project)},'
                f'"queue":{self._text(queue)},"type":{self._text(type)}}}')
        return job_type, queue, priority, max_attempts, limits, head, tail

    def _name(self, value: Any, what: str) -> str:
        if value.__class__ is str and value in self._names:
            return value
        checked_name(value, what)
        if value.__class__ is str:
            self._names.add(value)
        return value

    def _job_type(self, name: str) -> JobType | None:
        try:
            return self._types[name]
        except KeyError:
            pass
        job_type = None
        if self.strict or name in self.registry:
            job_type = self.registry.get(name)
        self._types[name] = job_type
        return job_type

    def _text(self, value: Any) -> str:
        """Canonical JSON of a name or a budget (hashable, shared by many jobs)."""
        text = self._texts.get(value)
        if text is None:
            text = dumps(value.to_dict() if isinstance(value, Budget) else value,
                         what="configuration")
            self._texts[value] = text
        return text
