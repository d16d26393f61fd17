"""The engines users would pick instead, run by the same harness on the same machine.

Each peer gets the same job counts and the same number of worker processes as tether, and
runs at its documented defaults (its own concurrency, batch sizes and durability); its other
variants (``Peer.VARIANTS``) are extra rows, never a replacement. Its no-op job is written the
way that engine expects (``async def`` where its workers are asyncio loops)."""

from __future__ import annotations

from .base import Peer
from .huey_peer import HueyPeer
from .pgqueuer_peer import PgQueuerPeer
from .procrastinate_peer import ProcrastinatePeer

ALL: dict[str, type[Peer]] = {"huey": HueyPeer, "procrastinate": ProcrastinatePeer,
                              "pgqueuer": PgQueuerPeer}


def peers_for(backend: str, enabled: tuple[str, ...] | list[str]) -> list[Peer]:
    """Every variant of every enabled peer on ``backend``, its defaults first."""
    return [cls(variant) for name, cls in ALL.items() if name in enabled and cls.backend == backend
            for variant in cls.VARIANTS]
