"""Waiting for jobs to finish (``POST /jobs?wait=``): one hub per server process, no polling.

A waiter registers its job and awaits a future. One thread, started by the first waiter, blocks
on the store's ``finish_signal()`` and on each wake re-reads the waited jobs at once, then
settles the futures of those that finished:

* PostgreSQL: LISTEN on ``tether.done:<schema>`` (migration 0007 sends one NOTIFY per finished
  job, its id as payload); only notified jobs that somebody waits on are read. A (re)connect
  may have lost notifications, so it re-reads every waited job.
* SQLite: ``PRAGMA data_version``, which changes on every commit of another connection (the
  in-process worker's included), watched as the store's ``wait_for_work`` does; each change is one
  ``finished_among`` read of all waited jobs, at most one per ``min_interval_s``.
* both: every ``fallback_s`` without a wake, the waited jobs are re-read, so a lost
  notification costs at most that, never a hang.

A token may hold ``max_per_token`` waits open; past it the request is refused with
``too_many_waits`` (429, ``Retry-After``) before anything is submitted. REST and MCP share this.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
from contextlib import contextmanager
from collections.abc import Iterator

from ..app import Tether
from ..records import Job
from ..store.base import FinishSignal, Store
from .problems import Problem

log = logging.getLogger("tether.wire.waits")

DEFAULT_MAX_PER_TOKEN = 100
DEFAULT_FALLBACK_S = 5.0

_Entry = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Job]"]


def _settle(future: asyncio.Future[Job], job: Job) -> None:
    if not future.done():
        future.set_result(job)


class WaitHub:
    """``slot`` (the per-token cap) and ``wait`` (until terminal or timeout) for one app."""

    def __init__(self, app: Tether, *, max_per_token: int | None = None,
                 fallback_s: float | None = None, min_interval_s: float = 0.02) -> None:
        self.app = app
        self.max_per_token = max_per_token if max_per_token is not None else int(
            os.environ.get("TETHER_MAX_WAITS_PER_TOKEN", DEFAULT_MAX_PER_TOKEN))
        self.fallback_s = fallback_s if fallback_s is not None else float(
            os.environ.get("TETHER_WAIT_FALLBACK_S", DEFAULT_FALLBACK_S))
        self.min_interval_s = min_interval_s
        self.wakes = 0  # re-reads done (for tests and operators)
        self._lock = threading.Lock()
        self._waiters: dict[int, list[_Entry]] = {}
        self._held: dict[str, list[float]] = {}
        self._busy = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._signal: FinishSignal | None = None

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

    async def wait(self, job: Job, seconds: float) -> Job:
        """The job once terminal, or as it stands after ``seconds``."""
        if job.terminal or seconds <= 0:
            return job
        loop = asyncio.get_running_loop()
        entry: _Entry = (loop, loop.create_future())
        with self._lock:
            self._waiters.setdefault(job.id, []).append(entry)
            self._busy.set()
        self._start()
        try:
            # registered first, read second: a finish before the registration is seen here
            current = await asyncio.to_thread(self.app.store.get_job, job.id)
            if current is None or current.terminal:
                return current or job
            try:
                return await asyncio.wait_for(entry[1], seconds)
            except TimeoutError:
                return await asyncio.to_thread(self.app.store.get_job, job.id) or current
        finally:
            with self._lock:
                entries = self._waiters[job.id]
                entries.remove(entry)
                if not entries:
                    del self._waiters[job.id]
                if not self._waiters:
                    self._busy.clear()

    def waiting(self) -> int:
        """How many requests are waiting now."""
        with self._lock:
            return sum(len(v) for v in self._waiters.values())

    # --- the watching thread ----------------------------------------------------------------------

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="tether-waits",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        store = self.app.store
        signal = self._signal = store.finish_signal()
        which: set[int] | None = None  # the first pass re-reads every waited job
        last = 0.0
        while not self._stop.is_set():
            gap = self.min_interval_s - (time.monotonic() - last)
            if gap > 0 and self._stop.wait(gap):
                break
            last = time.monotonic()
            try:
                self._check(store, which)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive a failed read
                log.warning("re-reading waited jobs failed: %s", exc)
            while not self._busy.wait(1.0):
                if self._stop.is_set():
                    return
            try:
                which = signal.wait(self.fallback_s)
            except Exception as exc:  # noqa: BLE001 - e.g. the SQLite file is locked
                log.warning("waiting for the store's signal failed: %s", exc)
                self._stop.wait(self.fallback_s)
                which = None

    def _check(self, store: Store, which: set[int] | None) -> None:
        with self._lock:
            waited = list(self._waiters) if which is None else [
                i for i in which if i in self._waiters]
        if not waited:
            return
        self.wakes += 1
        if which is None:
            waited = sorted(store.finished_among(waited))
        for job_id in waited:
            job = store.get_job(job_id)
            if job is not None and job.terminal:
                with self._lock:
                    entries = list(self._waiters.get(job_id, ()))
                for loop, future in entries:
                    try:
                        loop.call_soon_threadsafe(_settle, future, job)
                    except RuntimeError:  # that request's loop has closed
                        pass

    def close(self) -> None:
        self._stop.set()
        self._busy.set()
        if self._signal is not None:
            self._signal.close()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=3)
