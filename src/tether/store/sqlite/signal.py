"""How SQLite tells a waiter that jobs may have finished: it has no NOTIFY, so any commit of
another connection (``PRAGMA data_version``) may have finished one."""

from __future__ import annotations

from ...wakeup import Wakeup
from ..base import Store


class DataVersionSignal:
    """A ``FinishSignal`` over ``PRAGMA data_version``: wakes on any other connection's commit
    and reports ``None`` ("re-read every waited job"). Create and use it on one thread: the
    version it compares with is that thread's, taken when it is made."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._closed = Wakeup()
        store.wait_for_work(0)

    def wait(self, timeout: float) -> set[int] | None:
        self.store.wait_for_work(timeout, wake=self._closed)
        return None

    def close(self) -> None:
        self._closed.set()
