"""Which job types the live workers serve, and so which queued jobs no worker will claim.

A worker claims only the job types its app registers, on its queues (all unless told). A
queued job whose type no live worker serves on its queue is left queued, never failed, and
every interface says so (``unserved``): it runs once a worker whose app registers the type
starts. A worker is *live* while it has not stopped and its last heartbeat, by the store's
clock, is younger than its lease TTL. It beats every third of that TTL, so a live worker has
missed at most two beats; silent longer, its leases expire too and it is presumed gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

EVERY_QUEUE = "*"
"""What a worker without a queue list records as its queues."""

LEGACY_LIVE_S = 30.0
"""How long a worker row without a lease TTL (one written before workers recorded their
types and TTL) stays live after its last heartbeat: the default lease TTL."""


@dataclass(frozen=True)
class Served:
    """What one live worker claims: ``types`` None (a worker from before workers recorded
    their types) claims every type; ``queues`` None every queue."""

    types: frozenset[str] | None
    queues: frozenset[str] | None

    def serves(self, type: str, queue: str) -> bool:
        return ((self.types is None or type in self.types)
                and (self.queues is None or queue in self.queues))


@dataclass(frozen=True)
class Serving:
    """The live workers' types and queues, read at one moment."""

    workers: tuple[Served, ...] = ()

    @classmethod
    def of(cls, rows: Iterable[tuple[Iterable[str] | None, Iterable[str] | None]]) -> Serving:
        """From each live worker's (types, queues) as its row records them."""
        return cls(tuple(
            Served(None if types is None else frozenset(types),
                   None if queues is None or EVERY_QUEUE in queues else frozenset(queues))
            for types, queues in rows))

    def serves(self, type: str, queue: str) -> bool:
        """Whether some live worker would claim a job of ``type`` on ``queue``."""
        return any(w.serves(type, queue) for w in self.workers)

    def unserved(self, queued: Mapping[tuple[str, str], int]) -> dict[tuple[str, str], int]:
        """Of queued jobs counted by (queue, type), those no live worker serves."""
        return {(queue, type): n for (queue, type), n in sorted(queued.items())
                if n and not self.serves(type, queue)}
