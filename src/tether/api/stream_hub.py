"""Live event streams (Server-Sent Events) without polling the database in a tight loop.

Two streams of the REST API (the routes are ``api/routes_streams.py``; the dashboard reads
them there):

* one job's events (``job_stream``): every event after a seq, in seq order, then new ones as
  they commit; each SSE ``id`` is the event's seq. It ends once the job is terminal and every
  event it had then is sent. A job's events commit in seq order (``seq = last + 1`` under the
  job's row), so reading by seq after the last one sent can never skip one.
* every event of some projects (``feed_stream``): in ``(at, job_id, seq)`` order, each SSE
  ``id`` a feed position (``Store.feed``) that resumes exactly after it.

Either resumes from the ``Last-Event-ID`` a client sends back. ``?wait=`` waits on the same
hub (``until_terminal``): a waiter is a job stream that sends nothing.

One thread per hub, started by the first stream, waits on the store's ``event_signal()``
(SQLite: ``PRAGMA data_version``, any commit of another connection; PostgreSQL: LISTEN for jobs
queued and finished) or ``poll_s``, whichever comes first, and then makes two reads whatever
the number of streams: the event seq of every followed job, and the feed after its own
position. Only the streams with something new are woken, and each reads its own events. A
stream also re-reads after each keep-alive, so a wake-up lost with its thread costs at most
``keepalive_s``.

A token holds at most ``max_per_token`` streams (``TETHER_MAX_STREAMS_PER_TOKEN``, default
20); past it a stream is refused with ``too_many_streams`` (429, ``Retry-After``) before any
byte is sent. A stream keeps only the rights its token still has: every ``recheck_s``
(``TETHER_STREAM_RECHECK_S``, default 5) the thread reads which tokens are live, one read
whatever the number of streams (``check_tokens``), and the streams of a revoked token end
(a ``?wait=`` of one stops waiting), as a new request with it would be refused at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from collections.abc import AsyncIterator, Iterable

from ..app import Tether
from ..records import Event, Job
from ..store.base import FinishSignal
from ..wire.models import EventOut
from ..wire.problems import Problem

log = logging.getLogger("tether.api.stream_hub")

DEFAULT_MAX_PER_TOKEN = 20
DEFAULT_POLL_S = 1.0
DEFAULT_KEEPALIVE_S = 15.0
DEFAULT_RECHECK_S = 5.0
BATCH = 500
MEDIA_TYPE = "text/event-stream"
HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def _env(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def sse(event: Event, event_id: str) -> str:
    """One SSE message: ``id`` (resume point), ``event`` (the kind), ``data`` (the event JSON,
    as ``GET /jobs/{id}/events`` returns it)."""
    data = json.dumps(EventOut.of(event).model_dump(mode="json"), separators=(",", ":"))
    return f"id: {event_id}\nevent: {event.kind}\ndata: {data}\n\n"


_NEVER = sys.maxsize  # a seq no job reaches: a waiter is not woken before it has read one
KEEPALIVE = ": keep-alive\n\n"
RETRY = "retry: 2000\n\n"
REVOKED = ": unauthorized: the bearer token was revoked\n\n"


@dataclass(eq=False)
class _Sub:
    loop: asyncio.AbstractEventLoop
    wake: asyncio.Event
    job_id: int | None = None
    seq: int = 0
    projects: frozenset[str] | None = None
    feed: bool = False
    token: str | None = None  # the id of the token it is read with (None: no auth)
    revoked: bool = False

    def kick(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.wake.set)
        except RuntimeError:  # that request's loop has closed
            pass


@dataclass(eq=False)
class StreamSlot:
    """One of a token's ``max_per_token`` streams, held until ``release`` (idempotent)."""

    hub: StreamHub
    token: str
    released: bool = field(default=False)

    def release(self) -> None:
        self.hub._release(self)


class StreamHub:
    """The per-token cap (``acquire``) and the two streams for one app."""

    def __init__(self, app: Tether, *, max_per_token: int | None = None,
                 poll_s: float | None = None, keepalive_s: float | None = None,
                 recheck_s: float | None = None, min_interval_s: float = 0.05,
                 idle_close_s: float = 30.0) -> None:
        self.app = app
        self.idle_close_s = idle_close_s
        self.max_per_token = max_per_token if max_per_token is not None else int(
            _env("TETHER_MAX_STREAMS_PER_TOKEN", DEFAULT_MAX_PER_TOKEN))
        self.poll_s = poll_s if poll_s is not None else _env("TETHER_STREAM_POLL_S",
                                                             DEFAULT_POLL_S)
        self.keepalive_s = keepalive_s if keepalive_s is not None else _env(
            "TETHER_STREAM_KEEPALIVE_S", DEFAULT_KEEPALIVE_S)
        self.recheck_s = recheck_s if recheck_s is not None else _env(
            "TETHER_STREAM_RECHECK_S", DEFAULT_RECHECK_S)
        self.min_interval_s = min_interval_s
        self.checks = 0  # rounds of reads made by the hub's thread (for tests and operators)
        self._lock = threading.Lock()
        self._subs: set[_Sub] = set()
        self._held: dict[str, int] = {}
        self._busy = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._signal: FinishSignal | None = None
        self._unwatchable = False
        self._position: str | None = None

    # --- the cap ----------------------------------------------------------------------------------

    def acquire(self, token: str) -> StreamSlot:
        """One of ``token``'s streams, or 429 ``too_many_streams``."""
        with self._lock:
            held = self._held.get(token, 0)
            if held >= self.max_per_token:
                raise Problem(429, "too_many_streams",
                              f"this token already holds {held} event streams open (the limit "
                              f"is {self.max_per_token}); close one, or read "
                              "GET /jobs/{id}/events instead",
                              headers={"Retry-After": str(max(1, round(self.keepalive_s)))},
                              limit=self.max_per_token)
            self._held[token] = held + 1
        return StreamSlot(self, token)

    def _release(self, slot: StreamSlot) -> None:
        with self._lock:
            if slot.released:
                return
            slot.released = True
            left = self._held.get(slot.token, 1) - 1
            if left > 0:
                self._held[slot.token] = left
            else:
                self._held.pop(slot.token, None)

    def open_streams(self) -> int:
        """How many streams are open now."""
        with self._lock:
            return sum(self._held.values())

    # --- the streams ------------------------------------------------------------------------------

    async def job_stream(self, job_id: int, *, after: int = 0, slot: StreamSlot | None = None,
                         token: str | None = None) -> AsyncIterator[str]:
        """SSE text for job ``job_id`` after seq ``after``, until the job is terminal or
        ``token`` (an id) is revoked."""
        store = self.app.store
        sub = self._subscribe(_Sub(asyncio.get_running_loop(), asyncio.Event(), job_id=job_id,
                                   seq=after, token=token))
        try:
            yield RETRY
            last = after
            while True:
                sub.wake.clear()
                if sub.revoked:
                    yield REVOKED
                    return
                job = await asyncio.to_thread(store.get_job, job_id)
                events = await asyncio.to_thread(store.events, job_id, after=last, limit=BATCH)
                for event in events:
                    last = sub.seq = event.seq
                    yield sse(event, str(event.seq))
                if events:  # the job was read before them: look again before waiting
                    continue
                if job is None or job.terminal:
                    return
                if not await self._wait(sub):
                    yield KEEPALIVE
        finally:
            self._unsubscribe(sub)
            if slot is not None:
                slot.release()

    async def feed_stream(self, projects: Iterable[str] | None, *, after: str | None = None,
                          slot: StreamSlot | None = None,
                          token: str | None = None) -> AsyncIterator[str]:
        """SSE text for every event of ``projects`` (None: all) after feed position ``after``
        (None: from now on: every event committed after the client got the first bytes). It
        ends only when ``token`` (an id) is revoked."""
        store = self.app.store
        scope = None if projects is None else frozenset(projects)
        sub = self._subscribe(_Sub(asyncio.get_running_loop(), asyncio.Event(),
                                   projects=scope, feed=True, token=token))
        try:
            position = after if after is not None else await asyncio.to_thread(store.feed_head)
            yield RETRY  # the first bytes: whatever commits from here on will be sent
            while True:
                sub.wake.clear()
                if sub.revoked:
                    yield REVOKED
                    return
                items = await asyncio.to_thread(store.feed, after=position, projects=scope,
                                                limit=BATCH)
                for item in items:
                    yield sse(item.event, item.position)
                    position = item.position
                if len(items) == BATCH:
                    continue
                if not await self._wait(sub):
                    yield KEEPALIVE
        finally:
            self._unsubscribe(sub)
            if slot is not None:
                slot.release()

    async def until_terminal(self, job: Job, seconds: float, token: str | None = None) -> Job:
        """``job`` once terminal, or as it stands after ``seconds`` (``?wait=``). Woken by the
        job's next event, as its stream would be; re-read at least every ``keepalive_s``.
        A revoked ``token`` (an id) stops the wait early: the job as it stands."""
        if job.terminal or seconds <= 0:
            return job
        store = self.app.store
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        # registered first, read second: an event after the seq read wakes it
        sub = self._subscribe(_Sub(loop, asyncio.Event(), job_id=job.id, seq=_NEVER,
                                   token=token))
        try:
            while True:
                sub.wake.clear()
                seqs = await asyncio.to_thread(store.event_seqs, [job.id])
                sub.seq = seqs.get(job.id, 0)
                current = await asyncio.to_thread(store.get_job, job.id)
                if current is None or current.terminal:
                    return current or job
                left = deadline - loop.time()
                if left <= 0 or sub.revoked:
                    return current
                with suppress(TimeoutError):
                    await asyncio.wait_for(sub.wake.wait(), min(left, self.keepalive_s))
        finally:
            self._unsubscribe(sub)

    async def _wait(self, sub: _Sub) -> bool:
        """True when woken; False after ``keepalive_s`` (the caller sends a keep-alive)."""
        try:
            await asyncio.wait_for(sub.wake.wait(), self.keepalive_s)
            return True
        except TimeoutError:
            return False

    def _subscribe(self, sub: _Sub) -> _Sub:
        with self._lock:
            self._subs.add(sub)
            self._busy.set()
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="tether-streams",
                                                daemon=True)
                self._thread.start()
        return sub

    def _unsubscribe(self, sub: _Sub) -> None:
        with self._lock:
            self._subs.discard(sub)
            if not self._subs:
                self._busy.clear()

    # --- the watching thread ----------------------------------------------------------------------

    def _run(self) -> None:
        last = tokens_read = 0.0
        idle_since: float | None = None
        while not self._stop.is_set():
            if not self._busy.wait(1.0):
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= self.idle_close_s:
                    self._drop_signal()
                continue
            idle_since = None
            signal = self._open_signal()
            timeout = min(self.poll_s, self.recheck_s)
            try:
                signal.wait(timeout) if signal is not None else self._stop.wait(timeout)
            except Exception as exc:  # noqa: BLE001 - e.g. the SQLite file is locked
                log.warning("waiting for the store's signal failed: %s", exc)
                self._stop.wait(timeout)
            gap = self.min_interval_s - (time.monotonic() - last)
            if gap > 0 and self._stop.wait(gap):
                return
            last = time.monotonic()
            try:
                self.check()
                if last - tokens_read >= self.recheck_s:
                    tokens_read = last
                    self.check_tokens()
            except Exception as exc:  # noqa: BLE001 - the thread must outlive a failed read
                log.warning("re-reading for live streams failed: %s", exc)

    def _open_signal(self) -> FinishSignal | None:
        """The store's signal, opened when streams are open; None (poll) if it cannot be."""
        if self._signal is None and not self._unwatchable:
            try:
                self._signal = self.app.store.event_signal()
            except Exception as exc:  # noqa: BLE001 - streams still re-read every poll_s
                log.warning("live streams cannot watch the store: %s", exc)
                self._unwatchable = True
        return self._signal

    def _drop_signal(self) -> None:
        """Closed after ``idle_close_s`` without a stream: on PostgreSQL a live signal makes
        every finish send a NOTIFY (migration 0015), which costs workers' commits."""
        signal, self._signal = self._signal, None
        if signal is not None:
            signal.close()

    def check(self) -> int:
        """One round: read what changed and wake the streams it concerns; how many were woken.
        (The thread's single step; tests call it directly.)"""
        store = self.app.store
        with self._lock:
            subs = list(self._subs)
        woken: set[_Sub] = set()
        jobs = [s for s in subs if s.job_id is not None]
        if jobs:
            seqs = store.event_seqs(sorted({s.job_id for s in jobs if s.job_id is not None}))
            woken.update(s for s in jobs if seqs.get(s.job_id or 0, 0) > s.seq)
        feeds = [s for s in subs if s.feed]
        if not feeds:
            self._position = None
        elif self._position is None:  # the first round: every feed stream reads for itself
            self._position = store.feed_head()
            woken.update(feeds)
        else:
            items = store.feed(after=self._position, limit=BATCH)
            if items:
                self._position = items[-1].position
                touched = {i.project for i in items}
                woken.update(s for s in feeds if len(items) == BATCH or s.projects is None
                             or not s.projects.isdisjoint(touched))
        self.checks += 1
        for sub in woken:
            sub.kick()
        return len(woken)

    def check_tokens(self) -> int:
        """End the streams (and waits) of every token revoked since they opened: one read of
        the live tokens, whatever the number of streams. How many were ended. (The thread
        calls it every ``recheck_s``; tests call it directly.)"""
        with self._lock:
            subs = [s for s in self._subs if s.token is not None and not s.revoked]
        if not subs:
            return 0
        live = {t.id for t in self.app.store.list_tokens() if t.revoked_at is None}
        ended = [s for s in subs if s.token not in live]
        for sub in ended:
            sub.revoked = True
            sub.kick()
        return len(ended)

    def close(self) -> None:
        self._stop.set()
        self._busy.set()
        self._drop_signal()  # wakes the thread's wait
        thread = self._thread
        if thread is not None:
            thread.join(timeout=3)
        self._drop_signal()  # in case it opened one again meanwhile
