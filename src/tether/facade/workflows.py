"""The facade's workflow part: signals to waiting jobs and the waits a job has made.

``Tether`` inherits these methods; every interface (CLI, REST, MCP, dashboard) calls them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Iterable

from ..core import validate
from ..core.serialize import dumps, loads
from ..records import Job, Wait
from ..store.base import Store


class Workflows:
    """``signal`` and ``waits``."""

    if TYPE_CHECKING:
        @property
        def store(self) -> Store: ...  # Tether's (read-only there)

    def signal(self, job_id: int, name: str, value: Any = None, *,
               projects: Iterable[str] | None = None) -> Job:
        """Send signal ``name`` with ``value`` (JSON) to a job. A job waiting for it
        (``ctx.wait_for_signal``) is queued at once; a job not waiting yet finds it in its
        mailbox when it does. Each signal is consumed by exactly one wait. A finished job
        takes no signals (``JobStateError``)."""
        name = validate.name(name, "signal name")
        value = loads(dumps(value, what="signal value"))
        return self.store.send_signal(validate.job_id(job_id), name, value, projects=projects)

    def waits(self, job_id: int, *, projects: Iterable[str] | None = None) -> list[Wait]:
        """Every wait of a job, oldest first: gathers, timers and signal waits, with what each
        waits for (a signal wait's prompt and schema) and how it ended."""
        return self.store.waits(validate.job_id(job_id), projects=projects)

    def waiting_for(self, job_id: int, *,
                    projects: Iterable[str] | None = None) -> Wait | None:
        """The open wait a waiting job is blocked on, if any."""
        open_waits = [w for w in self.waits(job_id, projects=projects) if not w.done]
        if not open_waits:
            return None
        return max(open_waits, key=lambda w: (w.attempt, w.created_at))

