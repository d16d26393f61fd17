"""Heartbeats: renew all of a worker's leases in one statement, and notice what changed.

One ``beat()`` is one step (tests call it directly). A beat also carries news back: a job that
an operator is cancelling or pausing, and a job whose lease is gone (taken over after this
worker stalled). A worker that cannot renew for a whole lease TTL stands down: every job it
holds is told its lease is lost, so it starts no more calls and writes nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..clock import Clock
from ..core.states import JobState
from ..errors import JobCancelled, JobPaused, LeaseLost
from ..job import Lease
from ..store.base import Store

log = logging.getLogger("tether.heartbeat")


class Heartbeat:
    def __init__(self, store: Store, worker_id: str, *, lease_ttl: float,
                 leases: Callable[[], list[Lease]], clock: Clock,
                 interval: float | None = None) -> None:
        self.store = store
        self.worker_id = worker_id
        self.lease_ttl = lease_ttl
        self.leases = leases
        self.clock = clock
        self.interval = interval if interval is not None else max(0.05, lease_ttl / 3)
        self.last_ok = clock.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> bool:
        """Renew every lease this worker holds; returns False if the store could not be reached."""
        held = list(self.leases())
        try:
            # Only the jobs this worker still runs: one it stood down from (or failed to
            # finish) must expire and be rescued, not be kept alive by a worker that left it.
            renewed = self.store.heartbeat(self.worker_id, lease_ttl=self.lease_ttl,
                                           jobs=[lease.job_id for lease in held])
        except Exception as exc:  # noqa: BLE001 - any store failure means "not renewed"
            log.warning("heartbeat failed: %s", exc)
            if self.clock.monotonic() - self.last_ok >= self.lease_ttl:
                for lease in held:
                    lease.signal(LeaseLost("worker could not renew its leases; standing down"))
            return False
        self.last_ok = self.clock.monotonic()
        for lease in held:
            got = renewed.get(lease.job_id)
            if got is None or got[0] != lease.attempt:
                lease.signal(LeaseLost(f"lease on job {lease.job_id} was taken over"))
            elif got[1] == JobState.CANCELLING:
                lease.signal(JobCancelled(f"job {lease.job_id} was cancelled"))
            elif got[1] == JobState.PAUSING:
                lease.signal(JobPaused(f"job {lease.job_id} was paused"))
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tether-heartbeat", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
