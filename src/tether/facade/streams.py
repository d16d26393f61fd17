"""Following a job's events as they commit (``Tether.follow``; ``tether job events --follow``).

A follower reads the job's log by seq after the last event it yielded, so it can never skip
one (a job's events commit in seq order), and between reads it blocks on the store's
``event_signal()``: on SQLite any other connection's commit (``PRAGMA data_version``), on
PostgreSQL a job queued or finished (LISTEN), and at most ``poll_s`` otherwise. It never
busy-polls, and it stops once the job is terminal and every event it had then was yielded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..core import validate
from ..records import Event
from .host import FacadeHost

FOLLOW_POLL_S = 1.0
_PAGE = 1000


class StreamsPart(FacadeHost):
    """``follow``: a job's events, live, until it is terminal."""

    def follow(self, job_id: int, *, after: int = 0, projects: Iterable[str] | None = None,
               poll_s: float = FOLLOW_POLL_S) -> Iterator[Event]:
        """Every event of the job after seq ``after``, then each new one as it commits, ending
        once the job is terminal and all its events were yielded. ``JobNotFound`` at once for
        no such job (or one outside ``projects``)."""
        self.get(job_id, projects=projects)
        return self._follow(int(job_id), validate.seq(after), poll_s)

    def _follow(self, job_id: int, last: int, poll_s: float) -> Iterator[Event]:
        store = self.store
        signal = store.event_signal()
        try:
            while True:
                job = store.get_job(job_id)  # read first: the events read next are as new
                events = store.events(job_id, after=last, limit=_PAGE)
                for event in events:
                    last = event.seq
                    yield event
                if events:  # the job was read before them: look again before waiting
                    continue
                if job is None or job.terminal:
                    return
                signal.wait(poll_s)
        finally:
            signal.close()
