"""Group commit: many jobs' writes share one durable commit.

Job threads hand their writes (start, finish, reserve, settle, checkpoint, ...) to the
committer and block until the write has committed, so nothing acts on a write before it is
durable. The committer is a ``core.combining.Combiner``, not a thread: a write arriving while
none is in progress commits at once on its caller's own thread; writes arriving while one is
being committed queue, and the first of them then commits them all in ONE transaction, each in
its own savepoint: one write's failure (a lost lease, a budget refusal) rolls back only that
write. At low load a write commits alone, at once and without a thread hand-off; under load a
single fsync carries a whole batch. ``max_delay`` (default 0) may add a bounded wait to gather
larger batches.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Sequence

from ..core.combining import Combiner

log = logging.getLogger("tether.committer")


class _Retry(Exception):
    """A write failed in a batch run without savepoints: run the batch again with them."""

# Store methods that write and may join a shared commit (reads stay direct).
BATCHED = frozenset({
    "claim", "start", "finish", "finish_many", "set_stage", "append_event", "account", "reserve",
    "settle", "release",
    "record_cached", "add_examples", "save_checkpoint", "put_blob", "settle_rate",
})

Write = tuple[Callable[..., Any], tuple, dict]


class GroupCommitter(Combiner):
    def __init__(self, store: Any, *, max_batch: int = 256, max_delay: float = 0.0) -> None:
        super().__init__(max_batch=max_batch)
        self.store = store
        self.max_delay = max_delay
        self._inside = threading.local()

    @property
    def batches(self) -> int:
        return self.flushes

    @property
    def writes(self) -> int:
        return self.ops

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` inside the next shared transaction; returns once it has committed."""
        if getattr(self._inside, "active", False):  # a write made by a write being committed
            return fn(*args, **kwargs)
        return self.submit((fn, args, kwargs))

    def _gather(self, own: Any) -> list[Any]:
        if self.max_delay > 0:
            time.sleep(self.max_delay)
        return super()._gather(own)

    def _flush(self, ops: Sequence[Write]) -> list[tuple[Any, BaseException | None]]:
        self._inside.active = True
        try:
            return self._commit(ops)
        except BaseException as exc:  # noqa: BLE001 - the commit failed: nothing happened
            log.warning("group commit of %d writes failed: %s", len(ops), exc)
            raise
        finally:
            self._inside.active = False

    def _commit(self, batch: Sequence[Write]) -> list[tuple[Any, BaseException | None]]:
        """Run ``batch`` in one transaction. Optimistically without savepoints (each costs two
        statements, and nearly every write succeeds); if any write raises, that transaction is
        rolled back and the batch runs again with a savepoint per write, so only the failing
        writes fail. A write alone needs no savepoint: if it raises, its transaction rolls back."""
        try:
            return self._run(batch, savepoints=False)
        except _Retry as retry:
            if len(batch) == 1:  # alone: its rolled-back transaction was its savepoint
                return [(None, retry.__cause__)]
            return self._run(batch, savepoints=True)

    def _run(self, batch: Sequence[Write], *,
             savepoints: bool) -> list[tuple[Any, BaseException | None]]:
        outcomes: list[tuple[Any, BaseException | None]] = []
        with self.store.transaction(savepoints=savepoints):
            for fn, args, kwargs in batch:
                try:
                    outcomes.append((fn(*args, **kwargs), None))
                except BaseException as exc:  # noqa: BLE001 - control signals too (a budget
                    if not savepoints:        # refusal): without savepoints, all run again
                        raise _Retry() from exc
                    outcomes.append((None, exc))  # handed to its caller
        return outcomes

    def stop(self) -> None:
        """Nothing runs in the background: every write has committed when its caller returns."""


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
