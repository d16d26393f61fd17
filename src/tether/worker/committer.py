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
from typing import Any, Protocol
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..core.callbacks import Callback
from ..core.combining import Combiner
from ..core.headroom import Headroom
from ..core.pricing import ModelPrice
from ..core.states import JobState
from ..core.usage import Usage
from ..core.waits import WaitSpec
from ..errors import LeaseLost
from ..job import JobStore
from ..records import Checkpoint, JournalEntry, ProviderBatch, Wait
from ..store.base import AccountResult, CallReserve, CallSettle, Claim, Outcome
from ..store.ratelimits import RateLimit

log = logging.getLogger("tether.committer")


class _Retry(Exception):
    """A write failed in a batch run without savepoints: run the batch again with them."""


Write = tuple[Callable[..., Any], tuple, dict]
Many = Callable[[list[Any]], list[Any]]


def _alone(many: Many, item: Any) -> Any:
    """A mergeable write written by itself (``run_merged``)."""
    return many([item])[0]


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

    def run_merged(self, many: Many, item: Any) -> Any:
        """``many([item])[0]`` inside the next shared transaction; the items of a batch with
        the same ``many`` are written by ONE call of it (``many`` takes a list of items and
        returns their values in order, and writes each as if alone: what an item's failure
        means is its own value, never an exception)."""
        if getattr(self._inside, "active", False):
            return _alone(many, item)
        return self.submit((_alone, (many, item), {}))

    def _gather(self, own: Any) -> list[Any]:
        if self.max_delay > 0:
            time.sleep(self.max_delay)
        return super()._gather(own)

    def _flush(self, ops: Sequence[Write]) -> list[tuple[Any, BaseException | None]]:
        self._inside.active = True
        try:
            return self._commit(ops)
        except BaseException as exc:  # the commit failed: nothing happened
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
        merged: dict[int, Any] = {}
        with self.store.transaction(savepoints=savepoints):
            for i, (fn, args, kwargs) in enumerate(batch):
                if i in merged:
                    outcomes.append((merged.pop(i), None))
                    continue
                try:
                    if fn is _alone and not savepoints:
                        outcomes.append((self._merge(batch, i, merged), None))
                    else:
                        outcomes.append((fn(*args, **kwargs), None))
                except BaseException as exc:  # control signals too (a budget
                    if not savepoints:        # refusal): without savepoints, all run again
                        raise _Retry() from exc
                    outcomes.append((None, exc))  # handed to its caller
        return outcomes

    @staticmethod
    def _merge(batch: Sequence[Write], first: int, merged: dict[int, Any]) -> Any:
        """Write the mergeable writes of ``batch`` that share ``batch[first]``'s ``many`` with
        one call of it, where the first of them stands; the others' values go to ``merged``.
        (With savepoints, after a failure, each is written alone in its own.)"""
        many = batch[first][1][0]
        group = [i for i in range(first, len(batch))
                 if batch[i][0] is _alone and batch[i][1][0] == many]
        values = many([batch[i][1][1] for i in group])
        merged.update(zip(group[1:], values[1:], strict=True))
        return values[0]

    def stop(self) -> None:
        """Nothing runs in the background: every write has committed when its caller returns."""


class WorkerStore(JobStore, Protocol):
    """What a worker writes through: a running job's methods, and claiming and finishing in
    batches."""

    def claim(self, worker_id: str, *, queues: Sequence[str] | None, limit: int,
              lease_ttl: float, now: float | None = None, start: bool = False,
              types: Sequence[str] | None = None,
              versions: Sequence[str] | None = None, fair: bool = True) -> list[Claim]: ...
    def finish_many(self, items: Sequence[tuple[int, int, Outcome]], *,
                    now: float | None = None) -> list[JobState | LeaseLost]: ...


class CommittingStore(WorkerStore):
    """The store as job code and the executor see it in a worker: every write joins the
    committer's shared transaction and returns once that has committed; reads go straight to
    the store. It implements ``WorkerStore`` method by method (a test holds it to the list)."""

    def __init__(self, store: WorkerStore, committer: GroupCommitter) -> None:
        self._store = store
        self._run = committer.run
        self._merged = committer.run_merged
        self._account_many = getattr(store, "account_many", None)

    # --- writes: one shared commit ---------------------------------------------------------------

    def claim(self, worker_id: str, *, queues: Sequence[str] | None, limit: int,
              lease_ttl: float, now: float | None = None, start: bool = False,
              types: Sequence[str] | None = None,
              versions: Sequence[str] | None = None, fair: bool = True) -> list[Claim]:
        return self._run(self._store.claim, worker_id, queues=queues, limit=limit,
                         lease_ttl=lease_ttl, now=now, start=start, types=types,
                         versions=versions, fair=fair)

    def start(self, job_id: int, attempt: int, *, now: float | None = None) -> JobState:
        return self._run(self._store.start, job_id, attempt, now=now)

    def finish(self, job_id: int, attempt: int, outcome: Outcome, *,
               now: float | None = None) -> JobState:
        return self._run(self._store.finish, job_id, attempt, outcome, now=now)

    def finish_many(self, items: Sequence[tuple[int, int, Outcome]], *,
                    now: float | None = None) -> list[JobState | LeaseLost]:
        return self._run(self._store.finish_many, items, now=now)

    def set_stage(self, job_id: int, attempt: int, stage: str | None) -> None:
        return self._run(self._store.set_stage, job_id, attempt, stage)

    def append_event(self, job_id: int, kind: str, data: dict[str, Any], *,
                     attempt: int | None = None) -> int:
        return self._run(self._store.append_event, job_id, kind, data, attempt=attempt)

    def add_examples(self, job_id: int, attempt: int, n: int, *,
                     now: float | None = None) -> int:
        return self._run(self._store.add_examples, job_id, attempt, n, now=now)

    def account(self, job_id: int, attempt: int, ops: Sequence[CallReserve | CallSettle], *,
                now: float | None = None) -> list[AccountResult]:
        """Jobs' calls in one batch are written together (``Store.account_many``)."""
        if now is None and self._account_many is not None:
            return self._merged(self._account_many, (job_id, attempt, ops))
        return self._run(self._store.account, job_id, attempt, ops, now=now)

    def release(self, job_id: int, attempt: int, *, key: str, error_code: str,
                error_summary: str, billed: bool | None, now: float | None = None) -> None:
        return self._run(self._store.release, job_id, attempt, key=key, error_code=error_code,
                         error_summary=error_summary, billed=billed, now=now)

    def record_cached(self, job_id: int, attempt: int, *, key: str, stage: str | None,
                      provider: str, model: str, request_hash: str, result_json: str,
                      usage: Usage, fingerprint: str | None = None) -> None:
        return self._run(self._store.record_cached, job_id, attempt, key=key, stage=stage,
                         provider=provider, model=model, request_hash=request_hash,
                         result_json=result_json, usage=usage, fingerprint=fingerprint)

    def settle_rate(self, job_id: int, key: str, tokens: int | None, *,
                    headroom: Headroom | None = None, scopes: Sequence[str] = ()) -> None:
        return self._run(self._store.settle_rate, job_id, key, tokens, headroom=headroom,
                         scopes=scopes)

    def save_checkpoint(self, job_id: int, attempt: int, *, stage: str, position: int,
                        blob: str, size: int, now: float | None = None,
                        version: str | None = None) -> Checkpoint:
        return self._run(self._store.save_checkpoint, job_id, attempt, stage=stage,
                         position=position, blob=blob, size=size, now=now, version=version)

    def change_call(self, job_id: int, attempt: int, *, key: str, decision: str,
                    fingerprint: str, differs: dict[str, Any]) -> None:
        return self._store.change_call(job_id, attempt, key=key, decision=decision,  # rare
                                       fingerprint=fingerprint, differs=differs)

    def change_stage(self, job_id: int, attempt: int, *, stage: str, decision: str,
                     version: str | None, differs: dict[str, Any]) -> None:
        return self._store.change_stage(job_id, attempt, stage=stage, decision=decision,  # rare
                                        version=version, differs=differs)

    def begin_wait(self, job_id: int, attempt: int, spec: WaitSpec, *,
                   now: float | None = None) -> Wait:
        return self._store.begin_wait(job_id, attempt, spec, now=now)  # rare: not batched

    def reserve_batch(self, job_id: int, attempt: int, *, key: str, stage: str | None,
                      provider: str, model: str, tether_key: str,
                      items: Sequence[Mapping[str, Any]], price: ModelPrice,
                      standard: ModelPrice, profile_id: str,
                      now: float | None = None) -> ProviderBatch:
        return self._store.reserve_batch(  # rare: not batched
            job_id, attempt, key=key, stage=stage, provider=provider, model=model,
            tether_key=tether_key, items=items, price=price, standard=standard,
            profile_id=profile_id, now=now)

    def batch_uploading(self, job_id: int, attempt: int, key: str, *,
                        now: float | None = None) -> None:
        self._store.batch_uploading(job_id, attempt, key, now=now)

    def batch_submitted(self, job_id: int, attempt: int, key: str, remote_id: str, *,
                        first_poll_s: float | None = None,
                        now: float | None = None) -> ProviderBatch:
        return self._store.batch_submitted(job_id, attempt, key, remote_id,
                                           first_poll_s=first_poll_s, now=now)

    def batch_refused(self, job_id: int, attempt: int, key: str, error_code: str, *,
                      now: float | None = None) -> bool:
        return self._store.batch_refused(job_id, attempt, key, error_code, now=now)

    def batch_unconfirmed(self, job_id: int, attempt: int, key: str, reason: str, *,
                          now: float | None = None) -> ProviderBatch:
        return self._store.batch_unconfirmed(job_id, attempt, key, reason, now=now)

    def get_batch(self, job_id: int, key: str) -> ProviderBatch | None:
        return self._store.get_batch(job_id, key)

    def batch_answers(self, job_id: int, key: str) -> dict[str, dict[str, Any]]:
        return self._store.batch_answers(job_id, key)

    # --- reads, and the rate-limit wait (it may answer "not yet": nothing to share) ------------

    def lease_state(self, job_id: int, attempt: int) -> JobState:
        return self._store.lease_state(job_id, attempt)

    def journal(self, job_id: int, key: str | None = None) -> list[JournalEntry]:
        return self._store.journal(job_id, key)

    def cached_result(self, project: str, request_hash: str) -> tuple[Any, Usage] | None:
        return self._store.cached_result(project, request_hash)

    def get_checkpoint(self, job_id: int, stage: str) -> Checkpoint | None:
        return self._store.get_checkpoint(job_id, stage)

    def replay_decision(self, job_id: int) -> str | None:
        return self._store.replay_decision(job_id)

    def patches(self, job_id: int, attempt: int) -> tuple[dict[str, bool], bool]:
        return self._store.patches(job_id, attempt)

    def get_wait(self, job_id: int, key: str) -> Wait | None:
        return self._store.get_wait(job_id, key)

    def issue_callback(self, job_id: int, *, id: str, token_hash: str, expires_in: float,
                       issued_by: str, key: str | None = None, attempt: int | None = None,
                       projects: Iterable[str] | None = None,
                       now: float | None = None) -> Callback | None:
        return self._store.issue_callback(job_id, id=id, token_hash=token_hash,
                                          expires_in=expires_in, issued_by=issued_by, key=key,
                                          attempt=attempt, projects=projects, now=now)

    def callback_handed(self, job_id: int, id: str, *, now: float | None = None) -> None:
        self._store.callback_handed(job_id, id, now=now)

    def wait_results(self, job_id: int, key: str, *, after: int = 0,
                     limit: int = 1000) -> list[dict[str, Any]]:
        return self._store.wait_results(job_id, key, after=after, limit=limit)

    def acquire_rate(self, limits: Sequence[RateLimit], *, tokens: int, job_id: int, key: str,
                     now: float | None = None) -> float:
        return self._store.acquire_rate(limits, tokens=tokens, job_id=job_id, key=key, now=now)
