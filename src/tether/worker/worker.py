"""The worker loop. ``run_once()`` is one step: claim jobs for the free slots (and, for short
jobs, a batch to hold ready: ``prefetch.py``) and hand them to threads, then maintenance if it
is due. ``run()`` repeats it until told to stop. A worker claims only the job types its app
registers: jobs of other types are left queued for the workers of other apps.

SIGTERM (and SIGINT) drain: the worker stops claiming, tells every running job to stop at its
next safe boundary (so a call in flight finishes and is journaled), hands those leases back,
and exits 0. Jobs without boundaries simply run to completion.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Sequence

from ..clock import utc
from ..core.serving import EVERY_QUEUE, claim_filter, versions_served
from ..core.webhooks import DELIVERY_TYPE
from ..errors import StoreCorrupt, StoreError, WorkerShutdown
from ..job import Lease
from ..records import Job
from ..fleet import WorkerInfo
from ..registry import JobType
from ..store.base import Store
from ..wakeup import Wakeup
from .committer import CommittingStore, GroupCommitter
from .completer import Completer
from .executor import execute
from .heartbeat import Heartbeat
from .host import WorkerHost
from .prefetch import Prefetch
from .batch_poller import BatchPoller
from .outbox import DEFAULT_INTERVAL as OUTBOX_INTERVAL, Outbox
from .rescuer import Rescuer
from .scheduler import DEFAULT_INTERVAL, Scheduler
from .slots import Slots

log = logging.getLogger("tether.worker")

DEFAULT_LEASE_TTL = 30.0


def _open_store(app: WorkerHost, *, max_backoff: float = 30.0) -> Store:
    """The app's store, waiting for the database if it is not reachable yet (a worker started
    while PostgreSQL restarts, or while another process holds SQLite's write lock, waits with
    backoff instead of exiting). Only a configuration error ends the wait."""
    delay = 0.2
    while True:
        try:
            return app.store
        except StoreCorrupt:
            raise
        except StoreError as exc:
            log.warning("store not reachable yet (%s); retrying in %.1fs", exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, max_backoff)


def default_lease_ttl() -> float:
    return float(os.environ.get("TETHER_LEASE_TTL", DEFAULT_LEASE_TTL))


def default_fair_dispatch() -> bool:
    """Fair dispatch across projects, with aging (docs/flow-control.md), unless
    ``TETHER_FAIR_DISPATCH`` is 0, false or off (strict priority order)."""
    return os.environ.get("TETHER_FAIR_DISPATCH", "1").lower() not in ("0", "false", "off")


class Worker:
    def __init__(self, app: WorkerHost, *, concurrency: int = 4,
                 queues: Sequence[str] | None = None, lease_ttl: float | None = None,
                 poll_interval: float = 0.5, heartbeat_interval: float | None = None,
                 rescue_interval: float | None = None, worker_id: str | None = None,
                 schedule_interval: float | None = DEFAULT_INTERVAL,
                 webhook_interval: float | None = OUTBOX_INTERVAL,
                 batch: int | None = None, group_commit: bool = True,
                 prefetch: int | None = None, prefetch_horizon: float = 0.05,
                 fair_dispatch: bool | None = None) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.app = app
        self.store = _open_store(app)
        self.clock = app.clock
        self.concurrency = concurrency
        self.queues = list(queues) if queues else None
        self.lease_ttl = float(lease_ttl if lease_ttl is not None else default_lease_ttl())
        self.poll_interval = poll_interval
        self.fair = default_fair_dispatch() if fair_dispatch is None else fair_dispatch
        self.prefetch = Prefetch(concurrency, horizon_s=prefetch_horizon, max_ahead=prefetch)
        self.batch = batch or (concurrency + (self.prefetch.max_ahead or 0))
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._slots: Slots[tuple[Job, Lease, bool]] = Slots(concurrency, self._run_slot)
        self._running: dict[int, Lease] = {}
        self._max_jobs: int | None = None
        self._active = 0
        self._lock = threading.Lock()
        self._wake = Wakeup()       # new work or a free slot
        self._halt = Wakeup()       # set once, by stop(); cuts short a backoff _wake must not
        self.heartbeat = Heartbeat(self.store, self.id, lease_ttl=self.lease_ttl,
                                   leases=self.renewable, clock=self.clock,
                                   interval=heartbeat_interval)
        self.rescuer = Rescuer(self.store, interval=rescue_interval
                               if rescue_interval is not None else max(0.2, poll_interval))
        self.batches = BatchPoller(self.store, app, interval=self.rescuer.interval)
        self.scheduler = (Scheduler(self.store, interval=schedule_interval)
                          if schedule_interval is not None else None)
        self.outbox = (Outbox(app, interval=webhook_interval)
                       if webhook_interval is not None else None)
        self.completed = 0
        self._types: list[str] = []
        self._filter: tuple[list[str], list[str]] = ([], [])
        self._registered: list[str] | None = None  # the types its row records
        self._drained = False  # the last claim got fewer jobs than it asked for
        self.committer = (GroupCommitter(self.store)
                          if group_commit and self.store.group_commit
                          else None)
        self.writes = CommittingStore(self.store, self.committer) if self.committer else self.store
        self.completer = Completer(self.writes.finish_many, monotonic=self.clock.monotonic)

    # --- state ----------------------------------------------------------------------------------

    def leases(self) -> list[Lease]:
        """Every lease this worker holds: jobs running, and jobs whose outcome is not yet
        committed."""
        with self._lock:
            running = list(self._running.values())
        return running + self.completer.held()

    def renewable(self) -> list[Lease]:
        """The leases the heartbeat renews: all of them but outcomes handed to the completer
        less than a third of a TTL ago. Their commit is moments away, and renewing them would
        only wait on (or hold up) its row locks; a commit slower than that, one retried after
        a store failure, say, is renewed from then on, with two thirds of a TTL still left."""
        fresh = self.clock.monotonic() - self.lease_ttl / 3
        with self._lock:
            running = list(self._running.values())
        return running + self.completer.held(since=fresh)

    @property
    def busy(self) -> int:
        """Jobs this worker holds: running in a slot, or claimed and waiting for one."""
        with self._lock:
            return len(self._running)

    @property
    def active(self) -> int:
        """Jobs running in a slot now."""
        with self._lock:
            return self._active

    @property
    def stopping(self) -> bool:
        return self._halt.is_set()

    def types(self) -> list[str]:
        """The job types this worker claims: those its app registers (``core/serving.py``).
        A registry only grows, so its size says when to read the names again."""
        if len(self.app.registry) != len(self._types):
            self._types = self.app.registry.names()
            self._filter = claim_filter(self._job_types())
        return self._types

    def _job_types(self) -> list[JobType]:
        return [self.app.registry.get(name) for name in self.types()]

    def claim_filter(self) -> tuple[list[str], list[str]]:
        """What this worker's claims match: the types it claims at every version, and the
        ``version_key`` of each (type, version) it claims otherwise (``core/serving.py``)."""
        self.types()
        return self._filter

    def _register(self) -> None:
        """Write the worker's row at its first step, and again when its app has registered
        more types since, so ``serving`` sees what it claims; say once what it serves."""
        types = self.types()
        if self._registered == types:
            return
        now = utc(self.clock.time())
        self.store.register_worker(WorkerInfo(
            id=self.id, hostname=socket.gethostname(), pid=os.getpid(),
            queues=self.queues or [EVERY_QUEUE], concurrency=self.concurrency, started_at=now,
            last_heartbeat_at=now, stopped_at=None, types=types, lease_ttl=self.lease_ttl,
            versions=versions_served(self._job_types())))
        if self._registered is None:
            queues = ", ".join(self.queues) if self.queues else "all queues"
            if any(t != DELIVERY_TYPE for t in types):
                log.info("worker %s serves job types %s (%s)", self.id, ", ".join(types), queues)
            else:
                log.warning("worker %s serves no job types: its app registers none, so it "
                            "claims nothing but webhook deliveries", self.id)
        self._registered = types

    # --- one step -------------------------------------------------------------------------------

    def run_once(self) -> int:
        """Claim for the free slots and the fetch-ahead, then maintenance if due (after: a
        wake-up for new work should not wait for a rescue pass first): the rescuer, the batch
        poller, the scheduler's step (``schedule_interval=None``: this worker runs no
        schedules) and the webhook outbox's (``webhook_interval=None``: none). Returns how
        many were claimed."""
        self._register()
        claimed = 0 if self.stopping else self._claim()
        tick = self.clock.monotonic()
        if self.rescuer.due(tick):
            self.rescuer.run_once()
        if not self.stopping and self.batches.due(tick):
            self.batches.run_once()
        if self.scheduler is not None and not self.stopping and self.scheduler.due(tick):
            self.scheduler.run_once()
        if self.outbox is not None and not self.stopping and self.outbox.due(tick):
            self.outbox.run_once()
        return claimed

    def _claim(self) -> int:
        """Claim what the free slots and the fetch-ahead want. A claim that got fewer jobs
        than it asked for found the queue drained: the loop then waits for a wake-up instead
        of asking again at once, a round trip that would hold the GIL just when the job it
        claimed is starting (pickup latency)."""
        want = min(self.prefetch.want(self.busy), self.batch)
        self._drained = False
        if want <= 0:
            return 0
        every, versioned = self.claim_filter()
        claims = self.writes.claim(self.id, queues=self.queues, limit=want,
                                   lease_ttl=self.lease_ttl, start=True, types=every,
                                   versions=versioned, fair=self.fair)
        if claims:
            batch = [(claim.job, Lease(claim.job.id, claim.attempt), claim.started)
                     for claim in claims]
            with self._lock:
                for job, lease, _ in batch:
                    self._running[job.id] = lease
            self._slots.put_many(batch)
        self._drained = len(claims) < want
        return len(claims)

    def _run_slot(self, item: tuple[Job, Lease, bool]) -> None:
        self._execute(*item)

    def _execute(self, job: Job, lease: Lease, started: bool = False) -> None:
        with self._lock:
            self._active += 1
        began = time.perf_counter()
        try:
            if self.stopping:
                lease.signal(WorkerShutdown("worker is shutting down"))
            execute(self.app, job, lease, self.writes, started=started,
                    complete=self.completer.complete)
        except Exception:  # a store failure here must not kill the worker
            log.exception("job %s: could not record its outcome", job.id)
        finally:
            self.prefetch.observe(time.perf_counter() - began)
            with self._lock:
                self._running.pop(job.id, None)
                self._active -= 1
                self.completed += 1
                busy = len(self._running)
            if self._loop_wanted(busy):
                self._wake.set()

    def _loop_wanted(self, busy: int) -> bool:
        """Whether a job that just ended should wake the loop: only when the loop then has
        something to do (claim for free slots, notice it is idle or done, or drain). A loop
        woken after every job would take the GIL from the job threads for nothing."""
        return (busy == 0 or self.stopping or self.prefetch.want(busy) > 0
                or (self._max_jobs is not None and self.completed >= self._max_jobs))

    # --- the loop -------------------------------------------------------------------------------

    def run(self, *, install_signals: bool = True, stop_when_idle: bool = False,
            max_jobs: int | None = None) -> None:
        """Work until stopped (SIGTERM/SIGINT or ``stop()``); ``stop_when_idle`` ends the loop
        once nothing is queued or running (used by ``app.run`` and tests)."""
        if install_signals and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.stop())
            signal.signal(signal.SIGINT, lambda *_: self.stop())
        self.store.check_integrity()  # a corrupt SQLite file is one clear error at start
        self._max_jobs = max_jobs
        self.heartbeat.start()
        backoff = self.poll_interval
        try:
            while not self.stopping:
                try:
                    claimed = self.run_once()
                    backoff = self.poll_interval
                except StoreError as exc:
                    log.warning("store unavailable (%s); retrying in %.1fs", exc, backoff)
                    self._halt.wait(backoff)
                    backoff = min(backoff * 2, 30.0)
                    continue
                if max_jobs is not None and self.completed >= max_jobs:
                    break
                if stop_when_idle and claimed == 0 and self.busy == 0 and self._idle():
                    break
                if self._drained or self.prefetch.want(self.busy) <= 0:
                    self._idle_wait()
        finally:
            self._drain()

    def _idle_wait(self) -> None:
        """Wait for a free slot or new work: a local wake-up, another process's commit (the
        store's ``wait_for_work``: LISTEN/NOTIFY on PostgreSQL, ``data_version`` on SQLite),
        or the poll interval. A worker with no room for a job waits for a free slot only."""
        if self.busy >= self.concurrency + self.prefetch.ahead:
            self._wake.wait(self.poll_interval)
        else:
            self.store.wait_for_work(self.poll_interval, wake=self._wake)
        self._wake.clear()

    def _idle(self) -> bool:
        """Nothing of this worker's types, at a version it serves, is queued or waiting for
        a retry (of the first hundred of each type and state)."""
        return not any(job_type.serves(job.version)
                       for job_type in self._job_types()
                       for state in ("queued", "retry_wait")
                       for job in self.store.list_jobs(state=state, type=job_type.name,
                                                       limit=100))

    def stop(self) -> None:
        """Begin a graceful drain. Safe from a signal handler: it takes no lock (``Wakeup``)."""
        self._halt.set()
        self._wake.set()

    def _drain(self) -> None:
        self._halt.set()
        for lease in self.leases():
            lease.signal(WorkerShutdown("worker is shutting down"))
        self._slots.close(wait=True)
        self.completer.stop()
        if self.committer is not None:
            self.committer.stop()
        self.heartbeat.stop()
        try:
            self.store.stop_worker(self.id)
        except Exception:  # noqa: BLE001
            log.warning("could not mark worker %s stopped", self.id)
