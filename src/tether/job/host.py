"""JobHost: what a running job needs from the application that runs it; RunningJob: what the
context's parts need from the context.

The context reaches the application (``ctx.app``) only through these names, so the job layer
never imports the facade: ``tether.Tether`` satisfies this protocol, and a test may hand the
executor anything else that does.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol
from collections.abc import Iterable, Mapping

from ..blobs import BlobStore
from ..clock import Clock
from ..core.pricing import PriceProfile
from ..core.waits import WaitCounters
from ..providers.batches import BatchAdapter
from ..records import Job
from ..store.ratelimits import RateLimit
from ..tracing import AttemptTrace
from .lease import Lease
from .store import JobStore


class JobHost(Protocol):
    clock: Clock
    public_url: str | None
    """The address the API is reached at from outside (callback URLs are made under it)."""

    @property
    def store(self) -> JobStore: ...

    @property
    def blobs(self) -> BlobStore: ...

    def profile_for(self, job: Job) -> PriceProfile:
        """The price profile the job pinned at submission."""
        ...

    def rate_limits_for(self, provider: str, model: str) -> list[RateLimit]:
        """The shared rate limits a call to ``provider``/``model`` must fit in."""
        ...

    def batch_adapter(self, provider: str) -> BatchAdapter:
        """The adapter ``ctx.batch`` sends ``provider``'s batches through."""
        ...

    def submit_with_status(self, type: str, payload: Any = None,
                           **options: Any) -> tuple[Job, bool]:
        """Submit a job (``ctx.enqueue``'s children); also says whether it was created."""
        ...

    def submit_children(self, jobs: Iterable[Mapping[str, Any]], *,
                        again: bool = False) -> list[int]:
        """Submit a batch of child jobs in one transaction (``ctx.enqueue_many``'s): their
        ids. ``again``: likely submitted before (a replay): the keys are read first."""
        ...


class RunningJob(Protocol):
    """What the context's parts (``calls.py``, ``stages.py``) use of the context: its
    identity, its lease, its store and host, its safe boundary and its counters."""

    app: JobHost
    job: Job
    lease: Lease
    job_stage: str | None
    stats: Counter[str]
    waits: WaitCounters
    trace: AttemptTrace
    on_change: str

    @property
    def id(self) -> int: ...

    @property
    def attempt(self) -> int: ...

    @property
    def project(self) -> str: ...

    @property
    def store(self) -> JobStore: ...

    def check(self) -> None: ...

    def set_stage(self, name: str | None) -> None: ...

    def next_position(self) -> int: ...

    def replay_decision(self) -> str | None: ...
