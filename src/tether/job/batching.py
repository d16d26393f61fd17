"""One job's concurrent calls share store transactions.

Every ``ctx.call`` writes twice — the reservation before the provider is asked, the settlement
after — and each write must be durable before the call goes on. When ``ctx.map`` runs calls on
eight threads (or an async job awaits eight ``ctx.acall``s: coroutines queue their writes with
``asubmit``, without blocking their loop), those writes arrive together; ``CallBatcher`` hands
them to ``Store.account`` as one list, so one transaction (one durable commit, one read and one
write of the budget rows) carries every reservation and settlement that arrived while the
previous one was written.

It is a ``core.combining.Combiner`` (no batching thread: a caller leads each write) with one
addition: before writing, a leader waits until every other call of the job that is in progress
right now (``enter``/``leave``) has queued its write too — at most ``linger_s`` (1 ms), so a
call waiting on a slow provider never holds the others' writes longer than that. A lone call
is written at once. Operations are applied in arrival order and each gets its own outcome, so
one call's ``BudgetExhausted`` fails only that call.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any
from collections.abc import Callable, Iterator, Sequence

from ..core.combining import Combiner

Flush = Callable[[Sequence[Any]], list[tuple[Any, BaseException | None]]]


class CallBatcher(Combiner):
    """``submit(op)`` returns ``op``'s value, or raises its error, once it has been written."""

    def __init__(self, flush: Flush, *, max_batch: int = 64, linger_s: float = 0.001) -> None:
        super().__init__(max_batch=max_batch)
        self._write_ops = flush
        self.linger_s = linger_s
        self._active = 0
        self._lingering = False
        self._arrived = threading.Lock()  # released (once) to wake a lingering leader
        self._arrived.acquire()

    def _flush(self, ops: Sequence[Any]) -> list[tuple[Any, BaseException | None]]:
        return self._write_ops(ops)

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
            self._queued()

    def _ready(self) -> bool:
        return len(self._pending) >= min(self._active, self.max_batch)

    def _queued(self) -> None:
        """(mutex held) Wake a lingering leader once it may go."""
        if self._lingering and self._ready():
            self._lingering = False
            self._arrived.release()

    def _gather(self, own: Any) -> list[Any]:
        """Wait, up to ``linger_s``, until every call in progress has queued; then take up
        to ``max_batch`` ops, our own among them."""
        deadline = None
        while True:
            with self._mutex:
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self.linger_s
                if self._ready() or now >= deadline:
                    return self._take(own)
                self._lingering = True
            woken = self._arrived.acquire(timeout=deadline - now)
            with self._mutex:
                if not woken and not self._lingering:  # released as the wait timed out
                    self._arrived.acquire()
                self._lingering = False
