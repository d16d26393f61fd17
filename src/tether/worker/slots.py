"""The worker's slots: a fixed set of job threads that take claimed jobs from one queue, in
the order they were handed over (claim order).

A claim hands over its whole batch at once (``put_many``: one lock, one wake-up per idle
thread it can use), and a thread that finishes a job takes the next one waiting without
blocking, so a busy worker moves from job to job with no hand-off objects (no future per
job) and no sleep in between. ``close`` runs every job already handed over, then ends the
threads: a draining worker still reports each held job (handed back, it runs no job code).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")

log = logging.getLogger("tether.worker")


class Slots(Generic[T]):
    def __init__(self, size: int, run: Callable[[T], None], *, name: str = "tether-job") -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self.size = size
        self._run = run
        self._name = name
        self._queue: deque[T] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closed = False

    def put_many(self, items: Iterable[T]) -> None:
        """Hand jobs over; idle threads wake for them, busy ones take them when free."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the slots are closed")
            self._queue.extend(items)
            if len(self._threads) < self.size:
                self._start(self.size - len(self._threads))
            if self._idle:
                self._cond.notify(min(self._idle, len(self._queue)))

    def _start(self, n: int) -> None:
        for _ in range(n):
            thread = threading.Thread(target=self._loop, daemon=True,
                                      name=f"{self._name}_{len(self._threads)}")
            self._threads.append(thread)
            thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    if self._closed:
                        return
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                item = self._queue.popleft()
            try:
                self._run(item)
            except BaseException:  # a slot outlives any one job, as a pool thread does
                log.exception("a job thread's run raised")

    @property
    def waiting(self) -> int:
        """Jobs handed over that no thread has taken yet."""
        return len(self._queue)

    def close(self, *, wait: bool = True) -> None:
        """Take no more jobs; the threads run what was handed over and end (``wait``: join
        them)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()
