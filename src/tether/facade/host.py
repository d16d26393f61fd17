"""FacadeHost: what the facade's parts use of the application they are parts of.

``Tether`` is ``app.py`` plus one part per concept under ``facade/`` (docs/architecture.md,
"Facade parts"). A part reaches the rest of the application only through the names declared
here: the store, the clock, the registry, the price profile, and the reads, controls and
submission rules ``app.py`` defines. Each part subclasses this protocol, so mypy checks every
part against it once, and checks that ``Tether``, which inherits every part, provides each
member: a member it lacked would leave it abstract, and ``Tether()`` would not type-check.
(``job/host.py`` is the same seam one layer down: what a running job needs of the app.)
"""

from __future__ import annotations

import builtins
from typing import Any, Protocol
from collections.abc import Iterable

from ..clock import Clock
from ..core.pricing import PriceProfile
from ..records import Job
from ..registry import Registry
from ..store.base import NewJob, Store
from ..submission import Resolver


class FacadeHost(Protocol):
    clock: Clock
    registry: Registry
    public_url: str | None
    """The address the API is reached at from outside (callback URLs are made under it)."""

    @property
    def store(self) -> Store:
        """The store, opened (and migrated) on first use."""
        ...

    @property
    def price_profile(self) -> PriceProfile:
        """The profile new jobs (and schedules, and forks) pin."""
        ...

    def get(self, job_id: int, *, projects: Iterable[str] | None = None) -> Job:
        """The job, or ``JobNotFound`` (also for a job outside ``projects``)."""
        ...

    def list(self, *, project: str | None = None, projects: Iterable[str] | None = None,
             state: str | None = None, type: str | None = None, queue: str | None = None,
             search: str | None = None, before_id: int | None = None,
             limit: int = 50) -> builtins.list[Job]: ...

    def resume(self, job_id: int, *, projects: Iterable[str] | None = None,
               on_change: str | None = None) -> Job: ...

    def _resolve(self, type: str, payload: Any, **options: Any) -> NewJob:
        """The row ``submit`` would insert (``submission.py``'s rules)."""
        ...

    def _resolver(self) -> Resolver: ...
