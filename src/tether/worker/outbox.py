"""The webhook outbox loop: every worker runs it, periodically; any number may run at once.

Each ``run_once`` is one store step (``Store.webhook_step`` through the host, which knows the
app's delivery settings): the job events after the outbox cursor and the schedule misses not
yet dispatched become delivery jobs, and the cursor moves, in one transaction. Two workers'
steps meet at the cursor's row: the later finds it moved and writes nothing. A worker that
dies mid-step loses nothing: the transaction rolls back and the next step does the work.
"""

from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger("tether.webhooks")

DEFAULT_INTERVAL = 1.0
"""Seconds between two steps of one worker: an event waits at most this (plus the step) to
become a delivery job."""


class OutboxHost(Protocol):
    def webhook_step(self, *, now: float | None = None) -> int: ...


class Outbox:
    def __init__(self, host: OutboxHost, *, interval: float = DEFAULT_INTERVAL) -> None:
        self.host = host
        self.interval = interval
        self._next = 0.0

    def run_once(self, *, now: float | None = None) -> int:
        made = self.host.webhook_step(now=now)
        if made:
            log.info("webhook outbox: %d deliveries enqueued", made)
        return made

    def due(self, monotonic_now: float) -> bool:
        if monotonic_now >= self._next:
            self._next = monotonic_now + self.interval
            return True
        return False
