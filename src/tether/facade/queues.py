"""``Tether``'s queue control and its liveness read.

A part of the facade: the CLI's ``tether queue``, the REST queue routes, the MCP queue tools
and the dashboard's queue page all list, pause and resume queues through these methods, and
``/healthz`` asks ``ping``.
"""

from __future__ import annotations

import builtins

from ..errors import QueueNotFound
from ..fleet import QueueInfo
from ..submission import checked_name
from .host import FacadeHost


class QueuesPart(FacadeHost):
    """Queues: their job counts, pausing and resuming them (a part of ``Tether``)."""

    def queues(self, *, estimate: bool = False) -> builtins.list[QueueInfo]:
        """Every queue with its jobs counted by state. Exact by default, which reads every
        job. ``estimate`` is what ``/metrics`` reads on every scrape: live states still
        exact, but a queue's succeeded, failed or cancelled jobs beyond ``FINISHED_COUNT_CAP``
        (50,000) are PostgreSQL's planner estimate, read in time that does not grow with the
        history, as Oban Met reports big counts; SQLite keeps no statistics and counts them."""
        return self.store.queue_counts() if estimate else self.store.list_queues()

    def ping(self) -> int:
        """Read the store once, at a cost that does not grow with its tables: a liveness probe
        must answer in time beside millions of jobs, and while a prune or a migration holds
        the jobs table. Returns the schema version; raises ``StoreError`` when the store
        cannot be read."""
        return self.store.schema_version()

    def pause_queue(self, name: str) -> QueueInfo:
        return self.store.set_queue_paused(self._known_queue(name), True)

    def resume_queue(self, name: str) -> QueueInfo:
        return self.store.set_queue_paused(self._known_queue(name), False)

    def _known_queue(self, name: str) -> str:
        """A queue that has a row (a job was submitted to it, or it was paused) or that a
        registered job type declares; pausing any other name would create a queue by typo."""
        declared = {self.registry.get(t).queue for t in self.registry.names()}
        if checked_name(name, "queue") in declared or name in {q.name for q in self.queues()}:
            return name
        raise QueueNotFound(f"queue {name!r} not found: no job was ever submitted to it and "
                            "no registered job type declares it", queue=name)
