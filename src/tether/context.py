"""JobContext: what job code sees, and where its safe boundaries are.

Every method of the context that touches the store is a safe boundary: it first checks whether
the job was cancelled or paused, the worker is shutting down, or the lease was lost, and if so
raises the matching ``ControlSignal``. A raised signal is remembered, so job code that catches
it anyway cannot make the engine believe the attempt ended normally.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from .core.states import JobState
from .errors import ControlSignal, JobCancelled, JobPaused, LeaseLost, WorkerShutdown
from .records import Job

if TYPE_CHECKING:  # pragma: no cover
    from .app import Tether


class Lease:
    """The worker's view of one claimed job: its fencing token and any pending stop signal."""

    def __init__(self, job_id: int, token: int) -> None:
        self.job_id = job_id
        self.token = token
        self._signal: ControlSignal | None = None
        self._lock = threading.Lock()

    def signal(self, sig: ControlSignal) -> None:
        with self._lock:
            # A lost lease outranks everything: such a worker may write nothing at all.
            if self._signal is None or isinstance(sig, LeaseLost):
                self._signal = sig

    @property
    def pending(self) -> ControlSignal | None:
        return self._signal

    @property
    def lost(self) -> bool:
        return isinstance(self._signal, LeaseLost)


class JobContext:
    """Handed to every job function as its first argument."""

    def __init__(self, app: "Tether", job: Job, lease: Lease) -> None:
        self.app = app
        self.job = job
        self.lease = lease
        self.log = logging.getLogger(f"tether.job.{job.type}")
        self.raised: ControlSignal | None = None
        self._state = JobState.RUNNING

    @property
    def id(self) -> int:
        return self.job.id

    @property
    def attempt(self) -> int:
        return self.lease.token

    @property
    def payload(self) -> Any:
        return self.job.payload

    @property
    def project(self) -> str:
        return self.job.project

    @property
    def store(self):  # noqa: ANN201 - the app's Store
        return self.app.store

    def _raise(self, sig: ControlSignal) -> None:
        self.raised = sig
        raise sig

    def check(self) -> None:
        """A safe boundary: stop here if the job was cancelled or paused, or the worker must
        stand down. Cheap enough to call between any two units of work."""
        pending = self.lease.pending
        if pending is not None:
            self._raise(pending)
        try:
            state = self.store.lease_state(self.id, self.attempt)
        except LeaseLost as exc:
            self.lease.signal(exc)
            self._raise(exc)
        self._observe(state)

    def _observe(self, state: JobState) -> None:
        self._state = state
        if state == JobState.CANCELLING:
            self._raise(JobCancelled(f"job {self.id} was cancelled"))
        if state == JobState.PAUSING:
            self._raise(JobPaused(f"job {self.id} was paused"))

    def event(self, kind: str, **data: Any) -> int:
        """Append a custom event to the job's log (under the lease)."""
        self.check()
        return self.store.append_event(self.id, kind, data, token=self.attempt)

    def set_stage(self, name: str | None) -> None:
        self.check()
        self.store.set_stage(self.id, self.attempt, name)

    def raise_shutdown(self) -> None:  # used by tests and the worker's drain
        self._raise(WorkerShutdown("worker is shutting down"))
