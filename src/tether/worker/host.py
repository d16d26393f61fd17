"""WorkerHost: what a worker needs from the application whose jobs it runs.

``tether.Tether`` satisfies it; the worker layer never imports the facade.
"""

from __future__ import annotations

from typing import Protocol

from ..core.retry import RetryPolicy
from ..job import JobHost
from ..registry import Registry
from ..store.base import Store


class WorkerHost(JobHost, Protocol):
    registry: Registry
    """The job types: the executor looks each claimed job's type up here."""
    default_retry: RetryPolicy
    """The retry policy of a job whose type is not registered here."""

    @property
    def store(self) -> Store: ...

    def webhook_step(self, *, now: float | None = None) -> int:
        """One webhook outbox step (``worker/outbox.py``)."""
        ...
