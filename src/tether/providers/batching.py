"""One job's concurrent calls share store transactions.

Every ``ctx.call`` writes twice — the reservation before the provider is asked, the settlement
after — and each write must be durable before the call goes on. When ``ctx.map`` runs calls on
eight threads, those writes arrive together; ``CallBatcher`` hands them to ``Store.account``
as one list, so one transaction (one durable commit, one read and one write of the budget rows)
carries every reservation and settlement that arrived while the previous one was written.

There is no batching thread: the first caller to find no write in progress leads the next
write, and callers arriving meanwhile wait for it (followers); when it is written, the first
of those still waiting leads the next. Before writing, a leader waits until every other call of
the job that is in progress right now (``enter``/``leave``) has queued its write too — at most
``linger_s`` (1 ms), so a call waiting on a slow provider never holds the others' writes longer
than that. A lone call is written at once. Operations are applied in arrival order and each
gets its own outcome, so one call's ``BudgetExhausted`` fails only that call.

Each waiting thread sleeps on a lock of its own, released exactly once (a shared condition
would wake every follower to re-check, and with the GIL every needless wake-up is a thread
switch: measured about half the cost of a zero-latency call at concurrency 8).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

Flush = Callable[[Sequence[Any]], list[tuple[Any, BaseException | None]]]


class _Slot:
    __slots__ = ("op", "done", "value", "error", "wake")

    def __init__(self, op: Any) -> None:
        self.op = op
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.wake = threading.Lock()
        self.wake.acquire()  # released once: written, or handed the lead


class CallBatcher:
    """``submit(op)`` returns ``op``'s value, or raises its error, once it has been written."""

    def __init__(self, flush: Flush, *, max_batch: int = 64, linger_s: float = 0.001) -> None:
        self._flush = flush
        self.max_batch = max_batch
        self.linger_s = linger_s
        self._mutex = threading.Lock()
        self._pending: list[_Slot] = []
        self._leading = False
        self._active = 0
        self._lingering = False
        self._arrived = threading.Lock()  # released (once) to wake a lingering leader
        self._arrived.acquire()
        self.flushes = 0
        self.ops = 0

    @contextmanager
    def calling(self) -> Iterator[None]:
        """Around one call of this job: while inside, its writes will come through ``submit``
        (a leader waits for them)."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def enter(self) -> None:
        with self._mutex:
            self._active += 1

    def leave(self) -> None:
        with self._mutex:
            self._active -= 1
            self._wake_leader()

    def submit(self, op: Any) -> Any:
        slot = _Slot(op)
        with self._mutex:
            self._pending.append(slot)
            lead = not self._leading
            self._leading = True
            if not lead:
                self._wake_leader()
        if not lead:
            slot.wake.acquire()
        if not slot.done:  # we lead this write
            self._write(self._gather(slot))
        if slot.error is not None:
            raise slot.error
        return slot.value

    def _ready(self) -> bool:
        return len(self._pending) >= min(self._active, self.max_batch)

    def _wake_leader(self) -> None:
        """(mutex held) Wake a lingering leader once it may go."""
        if self._lingering and self._ready():
            self._lingering = False
            self._arrived.release()

    def _gather(self, own: _Slot) -> list[_Slot]:
        """Wait, up to ``linger_s``, until every call in progress has queued; then take up
        to ``max_batch`` ops, our own among them."""
        deadline = None
        while True:
            with self._mutex:
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self.linger_s
                if self._ready() or now >= deadline:
                    batch = self._pending[:self.max_batch]
                    rest = self._pending[self.max_batch:]
                    if own not in batch:  # more queued than one batch takes: ours too
                        rest.remove(own)
                        batch.append(own)
                    self._pending = rest
                    return batch
                self._lingering = True
            woken = self._arrived.acquire(timeout=deadline - now)
            with self._mutex:
                if not woken and not self._lingering:  # released as the wait timed out
                    self._arrived.acquire()
                self._lingering = False

    def _write(self, batch: list[_Slot]) -> None:
        try:
            outcomes = self._flush([s.op for s in batch])
        except BaseException as exc:  # noqa: BLE001 - the write failed as a whole: every op
            outcomes = [(None, exc)] * len(batch)
        with self._mutex:
            self.flushes += 1
            self.ops += len(batch)
            successor = self._pending[0] if self._pending else None
            self._leading = successor is not None
        for s, (value, error) in zip(batch, outcomes):
            s.value, s.error, s.done = value, error, True
            s.wake.release()  # our own slot's lock too: nobody waits on it, releasing is free
        if successor is not None:
            successor.wake.release()
