"""The records of the fleet as operators see it: queues, job types, workers and concurrency
limits. Frozen, so a read is a snapshot."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class QueueInfo:
    name: str
    paused: bool
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WorkerInfo:
    id: str
    hostname: str
    pid: int
    queues: list[str]
    concurrency: int
    started_at: datetime
    last_heartbeat_at: datetime
    stopped_at: datetime | None
    leases: int = 0
    types: list[str] | None = None
    """The job types it claims (its app's registered types); None for a worker from before
    workers recorded them, which claims every type."""
    lease_ttl: float | None = None
    """Its lease TTL: silent that long, it no longer counts as live (``core/serving.py``)."""
    versions: dict[str, list[str]] | None = None
    """The versions it claims of each type it claims only some versions of; a type left out
    (or None: a worker from before workers recorded them) is claimed at every version."""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("started_at", "last_heartbeat_at", "stopped_at"):
            out[k] = out[k].isoformat() if out[k] is not None else None
        return out


@dataclass(frozen=True)
class TypeInfo:
    """A job type as the flow control sees it: paused on its own (beside its queue), and its
    jobs counted by state."""
    name: str
    paused: bool
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FlowLimit:
    """A concurrency limit of a queue or a job type (``scope`` ``queue`` or ``type``): at most
    ``per_key`` of its jobs hold a slot per key, and at most ``total`` in all (None: no such
    limit). The key is the job's project, or its payload's ``key`` field when one is named (a
    job without that field counts under its project)."""
    scope: str
    name: str
    key: str | None
    per_key: int | None
    total: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FlowUsage:
    """Slots held now under one limit: per key (``key`` the key's value, ``limit`` the
    per-key limit) or in all (``key`` None, ``limit`` the total)."""
    scope: str
    name: str
    key: str | None
    running: int
    limit: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
