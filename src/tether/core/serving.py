"""Which job types (and versions) the live workers serve, and so which queued jobs no worker
will claim.

A worker claims only the job types its app registers, on its queues (all unless told), and of
each type only the jobs submitted at a version its code serves: the type's own version ("" for
an unversioned type) and those it says it ``replays`` (or every version, ``replays="any"``).
A queued job no live worker serves on its queue is left queued, never failed, and every
interface says so (``unserved``): it runs once a worker whose app registers the type at that
version starts. A worker is *live* while it has not stopped and its last heartbeat, by the store's
clock, is younger than its lease TTL. It beats every third of that TTL, so a live worker has
missed at most two beats; silent longer, its leases expire too and it is presumed gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

EVERY_QUEUE = "*"
"""What a worker without a queue list records as its queues."""

LEGACY_LIVE_S = 30.0
"""How long a worker row without a lease TTL (one written before workers recorded their
types and TTL) stays live after its last heartbeat: the default lease TTL."""


def version_key(type: str, version: str) -> str:
    """What a claim matches a job of ``type`` submitted at ``version`` by: versions have no
    ``@``, so the key names one pair whatever the type's name holds."""
    return f"{type}@{version}"


def claim_filter(job_types: Iterable[Any]) -> tuple[list[str], list[str]]:
    """A claim's filters for these job types (``registry.JobType``): the types claimed at
    every version, and the ``version_key`` of each (type, version) claimed otherwise."""
    every, keys = [], []
    for t in job_types:
        if t.replays is None:
            every.append(t.name)
        else:
            keys += [version_key(t.name, v) for v in sorted({t.version, *t.replays})]
    return every, keys


def versions_served(job_types: Iterable[Any]) -> dict[str, list[str]]:
    """What a worker's row records: the versions of each type it claims, a type it claims
    at every version left out."""
    return {t.name: sorted({t.version, *t.replays}) for t in job_types if t.replays is not None}


@dataclass(frozen=True)
class Served:
    """What one live worker claims: ``types`` None (a worker from before workers recorded
    their types) claims every type; ``queues`` None every queue; of a type in ``versions``
    only the versions listed, of any other type every version."""

    types: frozenset[str] | None
    queues: frozenset[str] | None
    versions: Mapping[str, frozenset[str]] | None = None

    def serves(self, type: str, queue: str, version: str = "") -> bool:
        listed = None if self.versions is None else self.versions.get(type)
        return ((self.types is None or type in self.types)
                and (listed is None or version in listed)
                and (self.queues is None or queue in self.queues))


@dataclass(frozen=True)
class Serving:
    """The live workers' types and queues, read at one moment."""

    workers: tuple[Served, ...] = ()

    @classmethod
    def of(cls, rows: Iterable[tuple[Any, Any, Any]]) -> Serving:
        """From each live worker's (types, queues, versions) as its row records them."""
        return cls(tuple(
            Served(None if types is None else frozenset(types),
                   None if queues is None or EVERY_QUEUE in queues else frozenset(queues),
                   None if versions is None else {t: frozenset(v) for t, v in versions.items()})
            for types, queues, versions in rows))

    def serves(self, type: str, queue: str, version: str = "") -> bool:
        """Whether some live worker would claim a job of ``type`` at ``version`` on ``queue``."""
        return any(w.serves(type, queue, version) for w in self.workers)

    def unserved(self, queued: Mapping[tuple[str, str, str], int]
                 ) -> dict[tuple[str, str, str], int]:
        """Of queued jobs counted by (queue, type, version), those no live worker serves."""
        return {(queue, type, version): n for (queue, type, version), n in sorted(queued.items())
                if n and not self.serves(type, queue, version)}
