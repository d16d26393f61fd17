"""Waiting for jobs to finish (``POST /jobs?wait=``): the per-token cap, then the stream hub.

A waiter holds one of its token's ``max_per_token`` wait slots (past it the request is
refused with ``too_many_waits``, 429 with ``Retry-After``, before anything is submitted) and
then waits as a live stream of its job would (``stream_hub.StreamHub.until_terminal``):
woken by the job's next event, found by the hub's one thread that watches the store's
``event_signal()`` for every stream and waiter at once (LISTEN/NOTIFY on PostgreSQL,
``PRAGMA data_version`` on SQLite), never by polling the job.
"""

from __future__ import annotations

import math
import os
import threading
import time
from contextlib import contextmanager
from collections.abc import Iterator

from ..app import Tether
from ..records import Job
from ..wire.problems import Problem
from .stream_hub import StreamHub

DEFAULT_MAX_PER_TOKEN = 100


class WaitHub:
    """``slot`` (the per-token cap) and ``wait`` (until terminal or timeout) for one app;
    ``streams`` is the server's stream hub (one of its own if not given)."""

    def __init__(self, app: Tether, *, streams: StreamHub | None = None,
                 max_per_token: int | None = None) -> None:
        self.app = app
        self.streams = streams if streams is not None else StreamHub(app)
        self.max_per_token = max_per_token if max_per_token is not None else int(
            os.environ.get("TETHER_MAX_WAITS_PER_TOKEN", DEFAULT_MAX_PER_TOKEN))
        self._lock = threading.Lock()
        self._held: dict[str, list[float]] = {}

    # --- the waiting side -------------------------------------------------------------------------

    @contextmanager
    def slot(self, token: str, seconds: float) -> Iterator[None]:
        """Hold one of ``token``'s waits for the block, or raise 429 ``too_many_waits``."""
        now = time.monotonic()
        with self._lock:
            held = self._held.setdefault(token, [])
            if len(held) >= self.max_per_token:
                retry = max(1, math.ceil(min(held) - now))
                raise Problem(429, "too_many_waits",
                              f"this token already holds {len(held)} waits open (the limit is "
                              f"{self.max_per_token}); retry later, or submit without ?wait "
                              "and follow the job", headers={"Retry-After": str(retry)},
                              limit=self.max_per_token)
            deadline = now + seconds
            held.append(deadline)
        try:
            yield
        finally:
            with self._lock:
                self._held[token].remove(deadline)
                if not self._held[token]:
                    del self._held[token]

    async def wait(self, job: Job, seconds: float, token: str | None = None) -> Job:
        """The job once terminal, or as it stands after ``seconds`` (or once ``token``, an
        id, is revoked)."""
        return await self.streams.until_terminal(job, seconds, token)
