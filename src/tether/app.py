"""Tether: the job registry and the one facade every interface (CLI, API, MCP, dashboard) calls."""

from __future__ import annotations

import builtins
import os
import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable, Mapping, Sequence

from .blobs import BlobStore, DatabaseBlobStore, FileBlobStore
from .clock import SYSTEM_CLOCK, Clock
from .core import validate
from .core.budget import Budget
from .core.estimate import CostEstimate, estimate_cost
from .core.flowkeys import KeyRule, rule as flow_rule
from .core.pricing import PriceProfile, load_profile
from .core.retry import RetryPolicy
from .core.serialize import loads
from .core.states import TERMINAL, JobState
from .core.webhooks import DELIVERY_TYPE
from .errors import ConfigurationError, InvalidArgument, JobNotFound
from .facade.batches import BatchesPart
from .facade.budgets import BudgetsPart
from .facade.callbacks import CallbacksPart
from .facade.flow import FlowPart
from .facade.forks import ForksPart
from .facade.queues import QueuesPart
from .facade.ratelimits import RateLimitsPart
from .facade.schedules import SchedulesPart
from .facade.spend import SpendPart
from .facade.streams import StreamsPart
from .facade.webhook_delivery import WebhookSettings
from .facade.webhooks import WebhooksPart
from .facade.workers import WorkersPart
from .facade.workflows import WorkflowsPart
from .records import Attempt, Checkpoint, Event, Job, JournalEntry, LedgerEntry
from .registry import JobFn, JobType, Registry, as_replays, as_stages
from .store.base import EngineStats, NewJob, Store
from .store.open import open_store
from .submission import (
    DEFAULT_PROJECT, DEFAULT_QUEUE, Resolver, as_budget, checked_name,
)

if TYPE_CHECKING:
    from .worker import Worker

DEFAULT_URL = "sqlite:///./tether.db"


class Tether(WorkflowsPart, CallbacksPart, ForksPart, SchedulesPart, SpendPart, StreamsPart,
             QueuesPart, FlowPart, WorkersPart, BatchesPart, BudgetsPart, RateLimitsPart,
             WebhooksPart):
    """A tether application: job types plus a store.

    ``Tether()`` reads ``TETHER_DATABASE_URL`` (default ``sqlite:///./tether.db``). The store
    is opened (and migrated) on first use, so importing an app module costs nothing. With
    ``create_database=False`` (what the read-only interfaces set) first use opens an existing
    tether database only and raises ``NoDatabase`` instead of creating or migrating one.
    ``fork`` and ``retry`` come from ``facade/forks.py``. ``public_url`` (default
    ``TETHER_PUBLIC_URL``): the address the API is reached at from outside, under which
    callback URLs are made (``facade/callbacks.py``).
    """

    def __init__(self, database_url: str | None = None, *, store: Store | None = None,
                 clock: Clock | None = None, price_profile: str | None = None,
                 strict_types: bool | None = None, blob_dir: str | None = None,
                 rate_limits: Mapping[str, Mapping[str, Any]] | None = None,
                 create_database: bool = True, public_url: str | None = None,
                 webhooks: WebhookSettings | None = None,
                 **store_options: Any) -> None:
        self.database_url = (database_url or os.environ.get("TETHER_DATABASE_URL")
                             or DEFAULT_URL)
        self.clock = clock or SYSTEM_CLOCK
        self.registry = Registry()
        self.default_retry = RetryPolicy()
        self.price_profile_path = price_profile or os.environ.get("TETHER_PRICE_PROFILE")
        self.strict_types = strict_types
        self.blob_dir = blob_dir or os.environ.get("TETHER_BLOB_DIR")
        self.public_url = public_url or os.environ.get("TETHER_PUBLIC_URL") or None
        self.create_database = create_database
        self.webhook_settings = webhooks or WebhookSettings.from_env()
        self._store = store
        self._store_options = store_options
        self._opening = threading.Lock()
        self._profile: PriceProfile | None = None
        self._pinned: dict[str, PriceProfile] = {}
        self._blobs: BlobStore | None = None
        self.rate_limits = {}
        for scope, limits in (rate_limits or {}).items():
            self.set_rate_limit(scope, **limits)

    # --- wiring ---------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The store, opened (and migrated) once, on first use, whichever thread gets there."""
        if self._store is None:
            with self._opening:
                if self._store is None:
                    opts = dict(self._store_options)
                    # Only a test's FakeClock stands in for the database clock. Any other
                    # clock is this process's own (a worker's), and a worker's clock must
                    # never decide lease expiry or backoff (docs/design.md, "Leases").
                    if self.clock.fake:
                        opts.setdefault("clock", self.clock)
                    self._store = open_store(self.database_url, create=self.create_database,
                                             **opts)
        return self._store

    @property
    def blobs(self) -> BlobStore:
        """Where stage outputs live: the database (default) or ``blob_dir`` / TETHER_BLOB_DIR."""
        if self._blobs is None:
            self._blobs = (FileBlobStore(self.blob_dir) if self.blob_dir
                           else DatabaseBlobStore(self.store))
        return self._blobs

    @property
    def price_profile(self) -> PriceProfile:
        """The profile new jobs pin: the shipped default plus the user's file, if any."""
        if self._profile is None:
            self._profile = load_profile(self.price_profile_path)
        return self._profile

    def profile_for(self, job: Job) -> PriceProfile:
        """The profile a job pinned at submission (prices never change under a running job)."""
        pid = job.price_profile
        if pid is None:
            return self.price_profile
        if pid not in self._pinned:
            if pid == self.price_profile.id:
                self._pinned[pid] = self.price_profile
            else:
                pinned = self.store.get_profile(pid)
                if pinned is None:
                    raise ConfigurationError(f"job {job.id} pinned price profile {pid}, "
                                             "which is not in the store")
                self._pinned[pid] = pinned
        return self._pinned[pid]

    def migrate(self) -> list[int]:
        """Apply pending schema migrations (also done on first use); returns those applied."""
        return self.store.migrate()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    # --- job types ------------------------------------------------------------------------------

    def job(self, name: str | JobFn | None = None, *, safe_to_retry: bool = True,
            max_attempts: int = 3, queue: str = DEFAULT_QUEUE, priority: int = 0,
            retry_unknown: bool = False, retry_on: tuple[type[BaseException], ...] = (),
            budget: Budget | Mapping[str, Any] | None = None,
            estimator: Callable[[Any], Any] | None = None,
            stages: Sequence[JobFn] | None = None, on_change: str = "pause",
            version: str = "", replays: str | Sequence[str] | None = None,
            singleton: bool = False, debounce_s: float | None = None,
            flow_key: KeyRule = None) -> Any:
        """Register a job type by decorating ``def f(ctx, payload)`` (or ``async def``).

        ``@app.job``, ``@app.job()`` and ``@app.job("name", ...)`` all work; the name defaults
        to the function's. With ``stages=[a, b]`` the decorated function is the last stage:
        ``a`` gets the payload, ``b`` a's output, the function b's output, each output
        checkpointed. The decorated function is returned unchanged. ``on_change``: what a
        replay does with a journaled call or a stage that changed since it was recorded
        (``pause``, ``reuse`` or ``repay``: docs/guarantees.md); ``version`` and ``replays``:
        which jobs its workers claim (docs/workflows.md). ``singleton`` (one live job per
        key) or ``debounce_s`` (one pending job per key, later submits replacing its
        payload), with ``flow_key`` a payload field or a function of the payload giving the
        key (default: the type as a whole): docs/flow-control.md.
        """
        if callable(name):
            return self.job()(name)

        def register(fn: JobFn) -> JobFn:
            listed = [*stages, fn] if stages else None
            self.register(name or fn.__name__, None if listed else fn, stages=listed,
                          safe_to_retry=safe_to_retry, max_attempts=max_attempts, queue=queue,
                          priority=priority, retry_unknown=retry_unknown, retry_on=retry_on,
                          budget=budget, estimator=estimator, on_change=on_change,
                          version=version, replays=replays, singleton=singleton,
                          debounce_s=debounce_s, flow_key=flow_key)
            return fn
        return register

    def register(self, name: str, fn: JobFn | None, *, stages: Sequence[JobFn] | None = None,
                 safe_to_retry: bool = True, max_attempts: int = 3, queue: str = DEFAULT_QUEUE,
                 priority: int = 0, retry_unknown: bool = False,
                 retry_on: tuple[type[BaseException], ...] = (),
                 budget: Budget | Mapping[str, Any] | None = None,
                 estimator: Callable[[Any], Any] | None = None,
                 on_change: str = "pause", version: str = "",
                 replays: str | Sequence[str] | None = None, singleton: bool = False,
                 debounce_s: float | None = None, flow_key: KeyRule = None) -> JobType:
        """Register a job type by function or by an ordered list of stage functions."""
        try:
            flow = flow_rule(singleton, debounce_s, flow_key)
        except InvalidArgument as exc:
            raise ConfigurationError(f"job type {name!r}: {exc.message}") from None
        return self.registry.add(JobType(
            name=checked_name(name, "job type"), fn=fn, stages=as_stages(stages),
            safe_to_retry=safe_to_retry, max_attempts=max_attempts, queue=queue,
            priority=priority, retry=RetryPolicy(retry_unknown=retry_unknown, retry_on=retry_on),
            budget=as_budget(budget) if budget is not None else None, estimator=estimator,
            on_change=on_change, version=version, replays=as_replays(replays), flow=flow))

    def pipeline(self, name: str, stages: Sequence[JobFn], **options: Any) -> JobType:
        """Register a multi-stage job type: each stage's output is checkpointed."""
        return self.register(name, None, stages=stages, **options)

    # --- submission -----------------------------------------------------------------------------

    def _resolve(self, type: str, payload: Any, **options: Any) -> NewJob:
        """The row to insert; it pins the current price profile, which the store saves in the
        submission's own transaction (a job never names a profile that did not commit)."""
        return self._resolver().one(type, payload, **options)

    def _resolver(self) -> Resolver:
        own = len(self.registry) - (DELIVERY_TYPE in self.registry)  # the app's own types
        strict = self.strict_types if self.strict_types is not None else own > 0
        return Resolver(self.registry, self.price_profile, strict=strict)

    def submit(self, type: str, payload: Any = None, *, project: str = DEFAULT_PROJECT,
               idempotency_key: str | None = None, queue: str | None = None,
               priority: int | None = None, run_after: datetime | float | None = None,
               max_attempts: int | None = None, budget: Budget | Mapping[str, Any] | None = None,
               singleton: bool | None = None, debounce_s: float | None = None,
               flow_key: str | None = None, conn: Any = None) -> Job:
        """Enqueue a job. With ``idempotency_key``, submitting the same configuration again
        returns the existing job, and a different configuration raises ``IdempotencyConflict``.
        ``singleton``, ``debounce_s`` and ``flow_key`` override the job type's (a submit
        matching a live singleton or a pending debounced job returns that job:
        docs/flow-control.md). ``conn`` enqueues inside the caller's open transaction
        (commits or rolls back with it)."""
        spec = self._resolve(type, payload, project=project, idempotency_key=idempotency_key,
                             queue=queue, priority=priority, run_after=run_after,
                             max_attempts=max_attempts, budget=budget, singleton=singleton,
                             debounce_s=debounce_s, flow_key=flow_key)
        return self.store.submit([spec], conn=conn, profile=self.price_profile)[0][0]

    def submit_with_status(self, type: str, payload: Any = None,
                           **options: Any) -> tuple[Job, bool]:
        """Like ``submit``; also says whether the job was created (False: an idempotent repeat,
        a live singleton's job, or a pending debounced job whose payload this replaced)."""
        conn = options.pop("conn", None)
        spec = self._resolve(type, payload, **options)
        return self.store.submit([spec], conn=conn, profile=self.price_profile)[0]

    def submit_many(self, jobs: Iterable[Mapping[str, Any]], *, conn: Any = None) -> list[Job]:
        """Enqueue many jobs in one transaction: all of them or none. Each item is a mapping
        of ``submit``'s arguments (``type``, ``payload``, ``project``, ...)."""
        specs = self._resolver().many(jobs)
        return [job for job, _ in self.store.submit(specs, conn=conn, profile=self.price_profile)]

    # --- reads ----------------------------------------------------------------------------------

    def get(self, job_id: int, *, projects: Iterable[str] | None = None) -> Job:
        job = self.store.get_job(validate.job_id(job_id))
        if job is None or (projects is not None and job.project not in set(projects)):
            raise JobNotFound(f"job {job_id} not found", job_id=job_id)
        return job

    def list(self, *, project: str | None = None, projects: Iterable[str] | None = None,
             state: str | None = None, type: str | None = None, queue: str | None = None,
             search: str | None = None, before_id: int | None = None,
             limit: int = 50) -> list[Job]:
        validate.texts(project=project, type=type, queue=queue, search=search)
        validate.state(state)
        validate.page(before_id, limit)
        scope = None if projects is None else set(projects)
        if project is not None:
            scope = {project} if scope is None else scope & {project}
        return self.store.list_jobs(projects=scope, state=state, type=type, queue=queue,
                                    search=search, before_id=before_id, limit=limit)

    def events(self, job_id: int, *, after: int = 0, limit: int = 1000,
               projects: Iterable[str] | None = None) -> builtins.list[Event]:
        """The job's log after ``after`` (a seq), oldest first; JobNotFound for no such job."""
        self.get(job_id, projects=projects)
        return self.store.events(int(job_id), after=validate.seq(after),
                                 limit=validate.count(limit, "limit"))

    def attempts(self, job_id: int, *,
                 projects: Iterable[str] | None = None) -> builtins.list[Attempt]:
        self.get(job_id, projects=projects)
        return self.store.attempts(int(job_id))

    # --- control --------------------------------------------------------------------------------

    def cancel(self, job_id: int, *, reason: str | None = None,
               projects: Iterable[str] | None = None) -> Job:
        """Cancel: at once if the job is not running, else at its next safe boundary."""
        return self.store.control(validate.job_id(job_id), "cancel", projects=projects,
                                  reason=validate.text(reason, "reason"))

    def pause(self, job_id: int, *, projects: Iterable[str] | None = None) -> Job:
        return self.store.control(validate.job_id(job_id), "pause", projects=projects)

    def resume(self, job_id: int, *, projects: Iterable[str] | None = None,
               on_change: str | None = None) -> Job:
        """Queue a paused job again. ``on_change`` decides for a job paused by
        ``journal_mismatch``: ``reuse`` the recorded answers of the calls (and checkpoints of
        the stages) that changed, or ``repay`` them; it holds until the job next waits,
        pauses or ends. Without it, such a job pauses again at the same change."""
        return self.store.control(validate.job_id(job_id), "resume", projects=projects,
                                  on_change=validate.decision(on_change))

    def requeue(self, job_id: int, *, projects: Iterable[str] | None = None) -> Job:
        """Queue an interrupted (or paused, or failed) job again; it resumes from checkpoints."""
        return self.store.control(validate.job_id(job_id), "requeue", projects=projects)

    def ledger(self, job_id: int, *,
               projects: Iterable[str] | None = None) -> builtins.list[LedgerEntry]:
        """One row per settled call of the job (unconfirmed rows: outcome unknown, counted)."""
        self.get(job_id, projects=projects)
        return self.store.ledger(int(job_id))

    def journal(self, job_id: int, *,
                projects: Iterable[str] | None = None) -> builtins.list[JournalEntry]:
        self.get(job_id, projects=projects)
        return self.store.journal(int(job_id))

    def checkpoints(self, job_id: int, *,
                    projects: Iterable[str] | None = None) -> builtins.list[Checkpoint]:
        self.get(job_id, projects=projects)
        return self.store.checkpoints(int(job_id))

    def checkpoint_value(self, job_id: int, stage: str) -> Any:
        cp = self.store.get_checkpoint(int(job_id), stage)
        if cp is None:
            raise JobNotFound(f"job {job_id} has no checkpoint for stage {stage!r}")
        return loads(self.blobs.get(cp.blob))

    def engine_stats(self) -> EngineStats:
        """Engine-wide counters read from the store (so every process reports the same):
        claims, lease expiries, budget pauses, and claim latency (eligible to claimed) of the
        most recent first attempts as a histogram."""
        return self.store.engine_stats()

    def estimate(self, type: str, payload: Any = None) -> CostEstimate:
        """Price a job without running it, from its type's estimator and the current profile."""
        job_type = self.registry.get(type)
        if job_type.estimator is None:
            raise ConfigurationError(f"job type {type!r} declares no estimator")
        return estimate_cost(job_type.estimator(payload), self.price_profile)

    def prune(self, *, older_than_s: float) -> int:
        """Delete terminal jobs (with their history) finished more than ``older_than_s`` ago."""
        return self.store.prune(older_than_s=older_than_s)

    # --- running --------------------------------------------------------------------------------

    def worker(self, **options: Any) -> Worker:
        from .worker import Worker  # a worker's modules load only in a process that runs one

        if DELIVERY_TYPE not in self.registry:  # every worker delivers webhooks
            self.registry.add(self.webhook_settings.job_type(lambda: self.store))
        return Worker(self, **options)

    def wait(self, job_id: int, *, timeout: float | None = None, poll: float = 0.1,
             until: Iterable[JobState] = TERMINAL) -> Job:
        """Block until the job is in one of ``until`` (default: terminal) or ``timeout``."""
        stop = set(until)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            if job.state in stop:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                return job
            time.sleep(poll)

    def run(self, type: str, payload: Any = None, *, timeout: float | None = None,
            in_process: bool = True, **options: Any) -> Job:
        """Submit and wait. With ``in_process`` (default) a worker runs here until the job stops
        (terminal or paused): ``type`` must then be registered here (``UnknownJobType``), as
        that worker claims only this app's types; otherwise some other worker runs it."""
        if in_process:
            self.registry.get(type)
        job = self.submit(type, payload, **options)
        if not in_process:
            return self.wait(job.id, timeout=timeout)
        worker = self.worker(concurrency=1, queues=[job.queue], poll_interval=0.05)
        thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                                  daemon=True)
        thread.start()
        try:
            return self.wait(job.id, timeout=timeout,
                             until=TERMINAL | {JobState.PAUSED, JobState.INTERRUPTED})
        finally:
            worker.stop()
            thread.join()
