"""The scheduler: every worker runs it, periodically; any number may run at once.

Each ``run_once`` is one store step (``Store.run_schedules``): due schedules are claimed with
row locks, each due tick becomes one job (its identity derived from the schedule's name and
the tick, so concurrent steps meet at the unique index), and ``next_run_at`` advances, all in
one transaction judged by the store's clock. A worker that dies mid-step loses nothing: the
transaction rolls back and the next step of any worker does the same work.
"""

from __future__ import annotations

import logging

from ..records import Job
from ..store.base import Store

log = logging.getLogger("tether.scheduler")

DEFAULT_INTERVAL = 1.0
"""Seconds between two steps of one worker: a tick is enqueued at most this late (plus the
time the step takes), far inside ``core.schedule.ON_TIME_S``."""


class Scheduler:
    def __init__(self, store: Store, *, interval: float = DEFAULT_INTERVAL) -> None:
        self.store = store
        self.interval = interval
        self._next = 0.0

    def run_once(self, *, now: float | None = None) -> list[Job]:
        """One step at ``now`` (default: the store's clock): the jobs it enqueued."""
        made = self.store.run_schedules(now=now)
        for job in made:
            log.info("schedule tick %s -> job %s", job.idempotency_key, job.id)
        return made

    def due(self, monotonic_now: float) -> bool:
        if monotonic_now >= self._next:
            self._next = monotonic_now + self.interval
            return True
        return False
