"""Combining: many threads' operations written together, by one of those threads.

Threads call ``submit(op)`` and get ``op``'s own value (or its own error) once it has been
written. There is no writing thread: the first caller to find no write in progress leads — it
takes every operation queued at that moment and writes them as one batch on its own thread;
callers arriving meanwhile queue and sleep (followers). When the batch is written, each of its
callers is woken with its outcome and the first caller still queued leads the next batch.

Why no dedicated thread: with the GIL, handing a write to another thread and waking the caller
afterwards costs two thread switches, usually across cores, and that can cost more than the
write itself. A caller alone writes at once on its own thread; under load a batch still
carries every write that arrived while the previous one was written.

Each waiting thread sleeps on a lock of its own, released exactly once (a shared condition
would wake every follower to re-check: every needless wake-up is a thread switch).

Coroutines submit with ``await asubmit(op)``, and never block their event loop. A loop's
operations are handed over once per turn of the loop: the first ``asubmit`` of a turn schedules
the hand-off (``call_soon``), so it runs after every coroutine made ready in that turn has run
up to its own ``asubmit``. Eight coroutines woken together by one write queue their next eight
operations as one group: one mutex round, and at most one thread started to write them. The
writing thread resolves the futures of a batch with one ``call_soon_threadsafe`` per loop
(a hand-off per operation would cost a thread switch per operation). The lead is never
handed to a coroutine: whichever thread wrote the last batch writes the next one too while a
coroutine's operation is first in the queue, so a stream of coroutine writes keeps one thread
writing back to back and no coroutine has to wake just to start a thread — nor can a
cancelled coroutine leave the queue without a leader.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from collections.abc import Sequence


class _Pending:
    """One submitted operation and, once written, its outcome."""

    __slots__ = ("op", "done", "value", "error")

    def __init__(self, op: Any) -> None:
        self.op = op
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None


class Slot(_Pending):
    """A thread's operation: its caller sleeps on a lock of its own."""

    __slots__ = ("_lock",)

    def __init__(self, op: Any) -> None:
        super().__init__(op)
        self._lock = threading.Lock()
        self._lock.acquire()  # released once: written, or handed the lead

    def sleep(self) -> None:
        self._lock.acquire()

    def wake(self) -> None:
        self._lock.release()


class AsyncSlot(_Pending):
    """A coroutine's operation: its future is resolved on its loop once it is written."""

    __slots__ = ("loop", "future")

    def __init__(self, op: Any, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(op)
        self.loop = loop
        self.future: asyncio.Future = loop.create_future()


def _resolve(futures: list[asyncio.Future]) -> None:
    for future in futures:
        if not future.done():  # a cancelled waiter's outcome is dropped; the write stands
            future.set_result(None)


class Combiner:
    """Subclasses define ``_flush(ops) -> [(value, error), ...]`` (one outcome per op, in
    order) and may override ``_gather`` (which ops the leader takes) and ``_queued`` (called
    with the mutex held whenever a follower queues)."""

    def __init__(self, *, max_batch: int) -> None:
        self.max_batch = max_batch
        self._mutex = threading.Lock()
        self._pending: list[Slot | AsyncSlot] = []
        self._leading = False
        self._turns: dict[asyncio.AbstractEventLoop, list[AsyncSlot]] = {}
        self.flushes = 0
        self.ops = 0

    def submit(self, op: Any) -> Any:
        slot = Slot(op)
        if not self._enqueue(slot):
            slot.sleep()
        if not slot.done:  # we lead this write
            self._lead(slot)
        if slot.error is not None:
            raise slot.error
        return slot.value

    async def asubmit(self, op: Any) -> Any:
        """``submit`` for coroutines: the event loop keeps running while ``op`` is written."""
        loop = asyncio.get_running_loop()
        slot = AsyncSlot(op, loop)
        turn = self._turns.get(loop)
        if turn is None:
            turn = self._turns[loop] = []
            loop.call_soon(self._hand_off, loop)
        turn.append(slot)
        await slot.future
        if slot.error is not None:
            raise slot.error
        return slot.value

    def _hand_off(self, loop: asyncio.AbstractEventLoop) -> None:
        """(on ``loop``, after its turn) Queue the turn's operations; if no write is in
        progress, a thread of the loop's executor writes them."""
        slots = self._turns.pop(loop)
        with self._mutex:
            self._pending.extend(slots)
            lead = not self._leading
            self._leading = True
            if not lead:
                self._queued()
        if lead:
            loop.run_in_executor(None, self._lead_for, slots)

    def _lead_for(self, slots: list[AsyncSlot]) -> None:
        try:
            self._lead(slots[0])
        except BaseException as exc:  # never strand a coroutine on its future
            with self._mutex:  # failed below, so never written by a later leader either
                self._pending = [s for s in self._pending if s not in slots]
                self._leading = False
            for s in slots:
                if not s.done:
                    s.error, s.done = exc, True
                    s.loop.call_soon_threadsafe(_resolve, [s.future])
            raise

    def _enqueue(self, slot: Slot | AsyncSlot) -> bool:
        """Queue ``slot``; True if its caller leads (no write was in progress)."""
        with self._mutex:
            self._pending.append(slot)
            lead = not self._leading
            self._leading = True
            if not lead:
                self._queued()
        return lead

    def _lead(self, slot: Slot | AsyncSlot | None) -> None:
        """Write ``slot``'s batch, and the next ones while a coroutine's op is first in line;
        a thread's op first in line is handed the lead."""
        while slot is not None:
            successor = self._write(self._gather(slot))
            if isinstance(successor, Slot):
                successor.wake()
                return
            slot = successor

    def _queued(self) -> None:
        """(mutex held) A follower has queued an operation."""

    def _take(self, own: Any) -> list[Any]:
        """(mutex held) Up to ``max_batch`` queued ops in arrival order, ``own`` among them."""
        batch = self._pending[:self.max_batch]
        rest = self._pending[self.max_batch:]
        if own not in batch:  # more queued than one batch takes: ours too
            rest.remove(own)
            batch.append(own)
        self._pending = rest
        return batch

    def _gather(self, own: Any) -> list[Any]:
        with self._mutex:
            return self._take(own)

    def _flush(self, ops: Sequence[Any]) -> list[tuple[Any, BaseException | None]]:
        raise NotImplementedError

    def _write(self, batch: list[Any]) -> Slot | AsyncSlot | None:
        """Write ``batch``, wake its callers; returns the slot that leads next, if any."""
        try:
            outcomes = self._flush([s.op for s in batch])
        except BaseException as exc:  # noqa: BLE001 - the write failed as a whole: every op
            outcomes = [(None, exc)] * len(batch)
        with self._mutex:
            self.flushes += 1
            self.ops += len(batch)
            successor = self._pending[0] if self._pending else None
            self._leading = successor is not None
        futures: dict[asyncio.AbstractEventLoop, list[asyncio.Future]] = {}
        for s, (value, error) in zip(batch, outcomes, strict=True):
            s.value, s.error, s.done = value, error, True
            if isinstance(s, AsyncSlot):
                futures.setdefault(s.loop, []).append(s.future)
            else:
                s.wake()  # our own slot's lock too: nobody waits on it, releasing is free
        for loop, waiting in futures.items():
            try:
                loop.call_soon_threadsafe(_resolve, waiting)
            except RuntimeError:  # that loop is closed: nobody is waiting any more
                pass
        return successor
