"""The rescuer: periodic, never one-shot. Expired leases are taken back by the database's
clock; retry_wait jobs whose backoff elapsed are queued again; waiting jobs whose timer is due
(or whose wake a crash could have missed) are decided again. Each call is one step."""

from __future__ import annotations

import logging

from ..store.base import Store

log = logging.getLogger("tether.rescuer")


class Rescuer:
    def __init__(self, store: Store, *, interval: float) -> None:
        self.store = store
        self.interval = interval
        self._next = 0.0

    def run_once(self, *, now: float | None = None) -> tuple[int, int]:
        """Expire stale leases, promote due retries, wake due waits. Returns (expired,
        promoted or woken)."""
        expired = self.store.expire_leases(now=now)
        for job_id, state in expired:
            log.info("job %s: lease expired -> %s", job_id, state)
        promoted = self.store.promote_due(now=now)
        promoted += self.store.wake_due(now=now)
        return len(expired), promoted

    def due(self, monotonic_now: float) -> bool:
        if monotonic_now >= self._next:
            self._next = monotonic_now + self.interval
            return True
        return False
