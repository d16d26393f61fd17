"""JobContext: what job code sees, and where its safe boundaries are.

Every method of the context that touches the store is a safe boundary: it first checks whether
the job was cancelled or paused, the worker is shutting down, or the lease was lost, and if so
raises the matching ``ControlSignal``. A raised signal is remembered on the lease
(``lease.py``), so job code that catches it anyway cannot make the engine believe the attempt
ended normally. The call path (``calls.py``) and stage checkpoints (``stages.py``) are the
context's own parts; the worker's executor builds one context per attempt.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import Counter
from datetime import datetime, timedelta
from typing import Any, TypeVar
from collections.abc import Callable, Iterable, Iterator, Mapping

from ..core.callbacks import Callback
from ..core.states import JobState
from ..core.waits import WaitCounters
from ..errors import (
    ControlSignal, InvalidCall, JobCancelled, JobPaused, LeaseLost, WorkerShutdown,
)
from ..records import Job
from ..tracing import NO_TRACE, AttemptTrace
from .calls import Calls
from .host import JobHost
from .lease import Lease
from .patches import Patches
from .stages import run_stage
from . import batches as _batches
from . import waits as _waits
from .store import JobStore

CHILD_BATCH = 1_000
"""Children ``enqueue_many`` submits a statement (a transaction)."""

T = TypeVar("T")
R = TypeVar("R")


class JobContext:
    """Handed to every job function as its first argument."""

    def __init__(self, app: JobHost, job: Job, lease: Lease,
                 store: JobStore | None = None) -> None:
        self.app = app
        self._store = store
        self.job = job
        self.lease = lease
        self._state = JobState.RUNNING
        self.job_stage: str | None = job.stage
        self.stats: Counter[str] = Counter()
        self.waits = WaitCounters()
        self._positions = 0
        self._lock = threading.Lock()
        self._calls: Calls | None = None
        self.trace: AttemptTrace = NO_TRACE
        """The attempt's spans (``tracing.py``); the executor sets it when tracing is on."""
        self.on_change = "pause"
        """The job type's policy for a call or stage a replay finds changed (``replay.py``);
        the executor sets it from the job type."""
        self._decision: tuple[str | None] | None = None
        self._patches = Patches()

    @property
    def log(self) -> logging.Logger:
        """The job type's logger (``tether.job.<type>``)."""
        return logging.getLogger(f"tether.job.{self.job.type}")

    @property
    def id(self) -> int:
        return self.job.id

    @property
    def attempt(self) -> int:
        return self.lease.attempt

    @property
    def payload(self) -> Any:
        return self.job.payload

    @property
    def project(self) -> str:
        return self.job.project

    @property
    def store(self) -> JobStore:
        """The app's store, or the view of it the worker writes through."""
        return self._store if self._store is not None else self.app.store

    @property
    def calls(self) -> Calls:
        """This attempt's call path (``calls.py``), made on its first call."""
        if self._calls is None:
            with self._lock:
                if self._calls is None:
                    self._calls = Calls(self)
        return self._calls

    def check(self) -> None:
        """A safe boundary: stop here if the job was cancelled or paused, or the worker must
        stand down. Cheap enough to call between any two units of work."""
        pending = self.lease.pending
        if pending is not None:
            self.lease.raise_signal(pending)
        try:
            state = self.store.lease_state(self.id, self.attempt)
        except LeaseLost as exc:
            self.lease.signal(exc)
            self.lease.raise_signal(exc)
        self._observe(state)

    def _observe(self, state: JobState) -> None:
        self._state = state
        if state == JobState.CANCELLING:
            self.lease.raise_signal(JobCancelled(f"job {self.id} was cancelled"))
        if state == JobState.PAUSING:
            self.lease.raise_signal(JobPaused(f"job {self.id} was paused"))

    def event(self, kind: str, **data: Any) -> int:
        """Append a custom event to the job's log (under the lease)."""
        self.check()
        return self.store.append_event(self.id, kind, data, attempt=self.attempt)

    def set_stage(self, name: str | None) -> None:
        self.check()
        self.store.set_stage(self.id, self.attempt, name)
        self.job_stage = name

    def replay_decision(self) -> str | None:
        """The operator's decision for changes this replay finds (``reuse``, ``repay``), given
        when the job was resumed; read from the store once, on the first change found."""
        if self._decision is None:
            self._decision = (self.store.replay_decision(self.id),)
        return self._decision[0]

    def patched(self, name: str) -> bool:
        """Whether this job takes the path of patch ``name``: True unless its history was
        recorded by code without the patch; the same answer on every replay
        (``job/patches.py``, docs/workflows.md)."""
        return self._patches.patched(self, name)

    def next_position(self) -> int:
        with self._lock:
            self._positions += 1
            return self._positions

    # --- the work API ---------------------------------------------------------------------------

    def stage(self, name: str, fn: Callable[[], T], *, version: str | None = None,
              on_change: str | None = None) -> T:
        """Run ``fn`` as the checkpointed stage ``name``; on resume its saved output is returned
        without running it again. Outputs must be JSON-serialisable. A checkpoint written by
        another ``version`` is a change (``on_change``: ``job/replay.py``)."""
        return run_stage(self, name, fn, version=version, on_change=on_change)

    def call(self, *, key: str, provider: str, model: str, estimate: Any,
             fn: Callable[[], Any] | None = None, request: Any = None, cache: bool = False,
             on_change: str | None = None, background: bool = False) -> Any:
        """A journaled, budgeted provider call. ``key`` names it within the job: a key that
        completed before (in any attempt) returns its recorded result and is never paid again,
        unless what it asks changed since (``on_change``: ``job/replay.py``).
        With ``cache=True`` an identical ``request`` (same provider and model) already answered
        anywhere in the project is reused instead of paid for again. With ``background=True``
        (OpenAI Responses) no ``fn``: ``request`` is made in the provider's background mode,
        its id journaled before the job waits without a lease (``job/batches.py``)."""
        if background:
            return _batches.background(self, key=key, provider=provider, model=model,
                                       request=request, estimate=estimate)
        if fn is None:
            raise InvalidCall("ctx.call needs fn= (or background=True and request=)")
        return self.calls.call(key=key, provider=provider, model=model, estimate=estimate,
                               fn=fn, request=request, cache=cache, on_change=on_change)

    async def acall(self, *, key: str, provider: str, model: str, estimate: Any,
                    fn: Callable[[], Any], request: Any = None, cache: bool = False,
                    on_change: str | None = None) -> Any:
        """``call`` for ``async def`` jobs; ``fn`` may return an awaitable."""
        return await self.calls.acall(key=key, provider=provider, model=model,
                                      estimate=estimate, fn=fn, request=request, cache=cache,
                                      on_change=on_change)

    def batch(self, *, key: str, provider: str, model: str, requests: Mapping[str, Any],
              estimate: Any, resend: Any = None) -> dict[str, Any]:
        """Send ``requests`` (item key -> request) as one provider batch at the batch price;
        each answer by its key (a ``BatchFailure`` for an item that got none). Every item's
        worst case (``estimate``: one ``Estimate``, or one per key) is reserved before the
        upload; the job then waits without a lease until a worker's sweep has settled the
        batch (``job/batches.py``). ``resend`` (``core.batches.Resend``, or a number of
        rounds): failed items the policy allows are sent again in new batches."""
        return _batches.batch(self, key=key, provider=provider, model=model,
                              requests=requests, estimate=estimate, resend=resend)

    async def abatch(self, *, key: str, provider: str, model: str,
                     requests: Mapping[str, Any], estimate: Any,
                     resend: Any = None) -> dict[str, Any]:
        """``batch`` for ``async def`` jobs."""
        return await _batches.abatch(self, key=key, provider=provider, model=model,
                                     requests=requests, estimate=estimate, resend=resend)

    def enqueue(self, type: str, payload: Any = None, *, key: str, detach: bool = False,
                **options: Any) -> Job:
        """Enqueue a child job whose identity is derived from this job and ``key``: however
        often this job is redelivered, exactly one child exists for each key. A cancel of
        this job cancels its live children, unless they are ``detach``-ed."""
        self.check()
        options.setdefault("project", self.project)
        job, _ = self.app.submit_with_status(
            type, payload, idempotency_key=f"child:{self.id}:{key}", parent_id=self.id,
            detached=detach, **options)
        return job

    # --- waits: the attempt ends, the lease is freed, the job replays when woken --------------

    def gather(self, children: Iterable[Job | int], *, fail: str = "fast") -> list[Any]:
        """Wait, without a lease, until the children finish; their results in order
        (``job/waits.py: gather``: ``fail="fast"`` or ``"collect"``)."""
        return _waits.gather(self, children, fail=fail)

    def gather_iter(self, children: Iterable[Job | int], *, fail: str = "fast",
                    page_size: int = 1000) -> Iterator[Any]:
        """``gather`` with the results streamed, ``page_size`` read at a time, in order:
        for gathers too large to hold every result at once."""
        return _waits.gather_iter(self, children, fail=fail, page_size=page_size)

    def enqueue_many(self, type: str, items: Iterable[Any], *, key: str = "item",
                     detach: bool = False, **options: Any) -> list[int]:
        """``enqueue`` for each item (keys ``{key}-0``, ``{key}-1``, ...), a batch of
        children a statement: the children's ids in order. Exactly one child per key however
        often this runs (a repeat makes no job and takes no id)."""
        options.setdefault("project", self.project)
        ids: list[int] = []
        batch: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            batch.append({**options, "type": type, "payload": item,
                          "idempotency_key": f"child:{self.id}:{key}-{i}",
                          "parent_id": self.id, "detached": detach})
            if len(batch) == CHILD_BATCH:
                ids.extend(self._submit_children(batch))
                batch = []
        ids.extend(self._submit_children(batch))
        return ids

    def _submit_children(self, batch: list[dict[str, Any]]) -> list[int]:
        """A later attempt replays the batch an earlier one submitted (``again``: its keys
        are read before anything is written)."""
        if not batch:
            return []
        self.check()
        return self.app.submit_children(batch, again=self.attempt > 1)

    def map_jobs(self, type: str, items: Iterable[Any], *, fail: str = "fast",
                 key: str = "item", **options: Any) -> list[Any]:
        """One child job of ``type`` per item (keys ``{key}-0``, ``{key}-1``, ...), gathered:
        the one-line fan-out and fan-in. Children are enqueued a batch a statement."""
        return self.gather(self.enqueue_many(type, items, key=key, **options), fail=fail)

    def map_jobs_iter(self, type: str, items: Iterable[Any], *, fail: str = "fast",
                      key: str = "item", page_size: int = 1000,
                      **options: Any) -> Iterator[Any]:
        """``map_jobs`` with the results streamed (``gather_iter``)."""
        return self.gather_iter(self.enqueue_many(type, items, key=key, **options),
                                fail=fail, page_size=page_size)

    def sleep(self, duration: float | timedelta, *, key: str | None = None) -> None:
        """Wait ``duration`` by the store's clock, holding no lease and no worker slot."""
        _waits.sleep(self, duration, key=key)

    def sleep_until(self, when: datetime | float, *, key: str | None = None) -> None:
        """Wait until ``when`` by the store's clock, holding no lease and no worker slot."""
        _waits.sleep_until(self, when, key=key)

    def wait_for_signal(self, name: str, *, timeout: float | timedelta | None = None,
                        prompt: str | None = None, schema: Mapping[str, Any] | None = None,
                        key: str | None = None,
                        callback: Callable[[Callback], Any] | None = None,
                        callback_expires: float | timedelta | None = None) -> Any:
        """The value of the next signal ``name`` (``app.signal``); a human approval is one.
        ``SignalTimeout`` if ``timeout`` passes first. ``callback`` receives a callback URL
        that answers the wait without an API token (``job/waits.py: wait_for_signal``)."""
        return _waits.wait_for_signal(self, name, timeout=timeout, prompt=prompt,
                                      schema=schema, key=key, callback=callback,
                                      callback_expires=callback_expires)

    def map(self, fn: Callable[[T], R], items: Iterable[T], *, concurrency: int = 8) -> list[R]:
        """``fn`` over ``items`` on up to ``concurrency`` threads, results in order. Each
        ``ctx.call`` inside reserves atomically, so concurrency cannot overshoot a budget. If
        any item raises, the items already running finish (their calls are journaled), no
        item that has not started yet is started (so a 429 with Retry-After, a refusal or a
        cancel stops the calls), and the first error — a control signal before any other —
        is raised."""
        items = list(items)
        if not items:
            return []
        results: list[Any] = [None] * len(items)
        errors: list[BaseException | None] = [None] * len(items)
        order = iter(range(len(items)))
        taking = threading.Lock()
        failed = threading.Event()

        def work() -> None:  # each thread takes the next item until none is left or one failed
            while not failed.is_set():
                with taking:
                    i = next(order, None)
                if i is None:
                    return
                try:
                    results[i] = fn(items[i])
                except BaseException as exc:  # noqa: BLE001 - re-raised below, in order
                    errors[i] = exc
                    failed.set()

        # each thread runs in a copy of this one's context: the current span (a call's
        # parent) and whatever context job code set carry into ``fn``
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(work,),
                                    name=f"tether-map-{self.id}-{k}", daemon=True)
                   for k in range(max(1, min(concurrency, len(items))))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        raised = [e for e in errors if e is not None]
        if raised:
            signals = [e for e in raised if isinstance(e, ControlSignal)]
            raise (signals or raised)[0]
        return results

    def add_examples(self, n: int = 1) -> int:
        """Count produced examples against ``max_examples``; returns the job's total. The
        limit also holds before money is spent: each call in flight holds room for one
        example, and no call is reserved once the examples counted and the calls in flight
        fill the limit (``core/budget.py: exceeded_limit``)."""
        self.check()
        try:
            return self.store.add_examples(self.id, self.attempt, n)
        except ControlSignal as sig:
            self.lease.raise_signal(sig)

    def raise_shutdown(self) -> None:
        """Stop the job here as a worker's drain would."""
        self.lease.raise_signal(WorkerShutdown("worker is shutting down"))
