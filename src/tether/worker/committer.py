"""Group commit: many jobs' writes share one durable commit.

Job threads hand their writes (start, finish, reserve, settle, checkpoint, ...) to one
committer thread and block until the write has committed, so nothing acts on a write before
it is durable. The committer runs every write queued while the previous commit was flushing
in ONE transaction, each in its own savepoint: one write's failure (a lost lease, a budget
refusal) rolls back only that write. At low load a write commits alone, at once; under load a
single fsync carries a whole batch. ``max_delay`` (default 0) may add a bounded wait to
gather larger batches.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

log = logging.getLogger("tether.committer")

_STOP = object()


class _Retry(Exception):
    """A write failed in a batch run without savepoints: run the batch again with them."""

# Store methods that write and may join a shared commit (reads stay direct).
BATCHED = frozenset({
    "claim", "start", "finish", "finish_many", "set_stage", "append_event", "account", "reserve",
    "settle", "release",
    "record_cached", "add_examples", "save_checkpoint", "put_blob", "settle_rate",
})


class GroupCommitter:
    def __init__(self, store: Any, *, max_batch: int = 256, max_delay: float = 0.0) -> None:
        self.store = store
        self.max_batch = max_batch
        self.max_delay = max_delay
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="tether-committer", daemon=True)
        self._thread.start()
        self.batches = 0
        self.writes = 0

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` inside the next shared transaction; returns once it has committed."""
        if threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        future: Future = Future()
        self._queue.put((fn, args, kwargs, future))
        return future.result()

    def _gather(self, first: Any) -> list:
        batch = [first]
        deadline = time.monotonic() + self.max_delay
        while len(batch) < self.max_batch:
            try:
                timeout = deadline - time.monotonic()
                item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                self._queue.put(_STOP)
                break
            batch.append(item)
        return batch

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch = self._gather(first)
            try:
                outcomes = self._commit(batch)
            except BaseException as exc:  # noqa: BLE001 - the commit failed: nothing happened
                log.warning("group commit of %d writes failed: %s", len(batch), exc)
                for _, _, _, future in batch:
                    future.set_exception(exc)
                continue
            self.batches += 1
            self.writes += len(batch)
            for future, value, exc in outcomes:
                if exc is None:
                    future.set_result(value)
                else:
                    future.set_exception(exc)

    def _commit(self, batch: list) -> list[tuple[Future, Any, BaseException | None]]:
        """Run ``batch`` in one transaction. Optimistically without savepoints (each costs two
        statements, and nearly every write succeeds); if any write raises, that transaction is
        rolled back and the batch runs again with a savepoint per write, so only the failing
        writes fail. A write alone needs no savepoint: if it raises, its transaction rolls back."""
        try:
            return self._run(batch, savepoints=False)
        except _Retry as retry:
            if len(batch) == 1:  # alone: its rolled-back transaction was its savepoint
                return [(batch[0][3], None, retry.__cause__)]
            return self._run(batch, savepoints=True)

    def _run(self, batch: list, *, savepoints: bool) -> list[tuple[Future, Any,
                                                                   BaseException | None]]:
        outcomes: list[tuple[Future, Any, BaseException | None]] = []
        with self.store.transaction(savepoints=savepoints):
            for fn, args, kwargs, future in batch:
                try:
                    outcomes.append((future, fn(*args, **kwargs), None))
                except BaseException as exc:  # noqa: BLE001 - control signals too (a budget
                    if not savepoints:        # refusal): without savepoints, all run again
                        raise _Retry() from exc
                    outcomes.append((future, None, exc))  # handed to its caller
        return outcomes

    def stop(self) -> None:
        self._queue.put(_STOP)
        self._thread.join(timeout=10)


class CommittingStore:
    """The store as job code and the executor see it in a worker: writes go through the
    committer, everything else straight to the store."""

    def __init__(self, store: Any, committer: GroupCommitter) -> None:
        self._store = store
        self._committer = committer

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name in BATCHED and callable(attr):
            def batched(*args: Any, **kwargs: Any) -> Any:
                return self._committer.run(attr, *args, **kwargs)
            return batched
        return attr
