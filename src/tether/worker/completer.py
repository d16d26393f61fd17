"""Batched completion: a job's outcome is written after its thread has moved on.

When a job function returns, its outcome is handed to the completer and the worker's slot is
free at once; the completer writes every outcome waiting at that moment with one
``finish_many`` (one transaction, one commit). The lease stays among the worker's heartbeat
leases until its outcome has committed, so a slow commit cannot let it expire. If the worker
dies first, the lease expires and the job runs again: the same at-least-once as a crash during
the job, never a lost or doubled outcome, because every finish is a compare-and-set on the
lease attempt. A store failure (disk full, database down) keeps the outcomes and retries with
backoff; an outcome whose lease the heartbeat has since declared lost is dropped, unwritten.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..errors import LeaseLost, StoreError
from ..job import Lease
from ..store.base import Outcome

log = logging.getLogger("tether.completer")


class Completer:
    def __init__(self, write: Callable[[list], list], *, max_batch: int = 500,
                 on_done: Callable[[list[Lease]], None] = lambda leases: None,
                 max_pending: int = 10_000,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._write = write
        self.max_batch = max_batch
        self.max_pending = max_pending
        self._on_done = on_done
        self._monotonic = monotonic
        self._pending: list[tuple[Lease, Outcome, float]] = []
        self._inflight: list[tuple[Lease, Outcome, float]] = []
        self._cond = threading.Condition(threading.Lock())
        self._waiting = False
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="tether-completer", daemon=True)
        self._thread.start()
        self.batches = 0
        self.written = 0

    def complete(self, lease: Lease, outcome: Outcome) -> None:
        """Queue an outcome; returns at once (blocks only if ``max_pending`` are waiting)."""
        with self._cond:
            while len(self._pending) >= self.max_pending and not self._stopping:
                self._cond.wait(0.1)
            self._pending.append((lease, outcome, self._monotonic()))
            if self._waiting:
                self._cond.notify_all()

    def held(self, *, since: float | None = None) -> list[Lease]:
        """The leases of outcomes not yet committed (``since``: only those handed over at or
        before that ``monotonic`` time)."""
        with self._cond:
            return [lease for lease, _, at in (*self._inflight, *self._pending)
                    if since is None or at <= since]

    def _take(self) -> list[tuple[Lease, Outcome, float]]:
        with self._cond:
            while not self._pending and not self._stopping:
                self._waiting = True
                self._cond.wait()
            self._waiting = False
            batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
            self._inflight = batch
            self._cond.notify_all()
            return batch

    def _loop(self) -> None:
        while True:
            batch = self._take()
            if not batch:
                if self._stopping:
                    return
                continue
            self._write_batch(batch)
            with self._cond:
                self._inflight = []
                self._cond.notify_all()

    def _write_batch(self, batch: list[tuple[Lease, Outcome, float]]) -> None:
        delay = 0.1
        leases = [lease for lease, _, _ in batch]
        while True:
            batch = [item for item in batch if not item[0].lost]
            if not batch:
                self._on_done(leases)
                return
            try:
                results = self._write([(lease.job_id, lease.attempt, out)
                                       for lease, out, _ in batch])
                break
            except StoreError as exc:
                log.warning("could not record %d outcomes (%s); retrying in %.1fs", len(batch),
                            exc, delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        self.batches += 1
        self.written += len(batch)
        for (lease, _, _), result in zip(batch, results, strict=True):
            if isinstance(result, LeaseLost):
                log.warning("job %s: lease %s lost before its outcome could be written",
                            lease.job_id, lease.attempt)
        self._on_done(leases)

    def flush(self, timeout: float = 60.0) -> None:
        """Wait until every queued outcome has been written (or dropped)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while (self._pending or self._inflight) and time.monotonic() < deadline:
                self._cond.wait(0.05)

    def stop(self) -> None:
        self.flush()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout=10)
