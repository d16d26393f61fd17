"""``Tether``'s read of its workers: who is running, and which queued jobs none of them serves.

A part of the facade: ``tether workers``, ``tether job status``, the REST job and worker
resources, the dashboard and ``/metrics`` read workers and unserved jobs through these methods.
What "live" means is ``core/serving.py``'s.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable

from ..core.serving import Serving
from ..core.states import JobState
from ..records import Job
from ..fleet import WorkerInfo
from .host import FacadeHost


class WorkersPart(FacadeHost):
    """Workers and the job types they serve (a part of ``Tether``)."""

    def workers(self, *, include_stopped: bool = False) -> builtins.list[WorkerInfo]:
        return self.store.list_workers(include_stopped=include_stopped)

    def serving(self) -> Serving:
        """What the live workers serve, read now."""
        return self.store.serving()

    def unserved(self, jobs: Iterable[Job]) -> set[int]:
        """The ids of those ``jobs`` that are queued and whose type, at their version, no live
        worker serves on their queue: they stay queued until such a worker starts. One read,
        and none when no job is queued."""
        queued = [job for job in jobs if job.state == JobState.QUEUED]
        if not queued:
            return set()
        serving = self.serving()
        return {job.id for job in queued
                if not serving.serves(job.type, job.queue, job.version)}

    def unserved_counts(self) -> dict[tuple[str, str, str], int]:
        """Queued jobs no live worker serves, counted by (queue, type, version)."""
        return self.serving().unserved(self.store.queued_by_type())
