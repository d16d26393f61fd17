"""A wake-up flag that a signal handler may raise.

A Python signal handler runs in the main thread between two bytecodes, possibly while that
thread holds a lock. ``threading.Event.set()`` takes the event's lock, so a SIGTERM landing
while the main thread is inside ``Event.wait()`` on the same event can deadlock the worker for
good (CPython gh-126434 is the same trap in ``multiprocessing.Event``). ``Wakeup`` is built on
``queue.SimpleQueue``, whose ``put`` is documented reentrant: it may interrupt a ``get`` in the
same thread. It offers the part of ``Event``'s interface the worker and the stores' waits use
(``wait_for_work(wake=...)``), for a single waiting thread.
"""

from __future__ import annotations

from queue import Empty, SimpleQueue


class Wakeup:
    """``set()`` from any thread or a signal handler; one thread ``wait()``s. A ``set()`` that
    lands between ``wait()`` and ``clear()`` may be lost, as with an ``Event``: every wait the
    worker makes is bounded, so a lost wake-up costs one poll interval, never a hang."""

    def __init__(self) -> None:
        self._tokens: SimpleQueue[None] = SimpleQueue()
        self._flag = False

    def set(self) -> None:
        self._flag = True
        self._tokens.put(None)

    def is_set(self) -> bool:
        return self._flag

    def clear(self) -> None:
        self._flag = False
        try:
            while True:
                self._tokens.get_nowait()
        except Empty:
            pass

    def wait(self, timeout: float | None = None) -> bool:
        """True once set (at once if it already is), False when ``timeout`` passed first (a
        negative timeout is zero, as for an ``Event``)."""
        if self._flag:
            return True
        try:
            self._tokens.get(timeout=None if timeout is None else max(timeout, 0.0))
        except Empty:
            return self._flag
        return True
