"""Waits inside a job: gather children, sleep, wait for a signal — without holding a lease.

A wait is one more journaled step. The first time job code reaches it, the wait is recorded
under the lease (``JobStore.begin_wait``) and, unless it is already satisfied, the attempt ends
with ``JobWaiting``: the worker's slot and the lease are freed and the job is ``waiting``.
When the store decides the wait is satisfied it queues the job; the job function runs again
from the top, finished stages and calls come back from the journal, and this wait returns its
recorded value. Keys make the replay find the same wait: a gather is named by its children,
a sleep by its place among the job's sleeps, a signal wait by its name and place among the
waits for that name. So job code between waits must be deterministic, as it must be for stage
and call keys.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from collections.abc import Callable, Iterable, Iterator

from ..clock import to_ts
from ..core import callbacks as cb
from ..core import validate
from ..core.waits import ChildFailure, WaitSpec, gather_key
from ..errors import ChildJobFailed, InvalidArgument, JobWaiting, SignalTimeout
from ..records import Job, Wait
from .host import RunningJob


def wait(ctx: RunningJob, spec: WaitSpec,
         opened: Callable[[Wait], None] | None = None) -> Wait:
    """The satisfied wait ``spec`` (recorded before, or satisfied now); otherwise the attempt
    ends here as ``waiting`` (``JobWaiting`` cannot be swallowed by job code), after
    ``opened`` was called with the open wait."""
    ctx.check()
    done = ctx.store.get_wait(ctx.id, spec.key)
    if done is None or not done.done:
        done = ctx.store.begin_wait(ctx.id, ctx.attempt, spec)
    if not done.done:
        if opened is not None:
            opened(done)
        ctx.lease.raise_signal(JobWaiting(f"job {ctx.id} waits ({spec.key})", key=spec.key))
    ctx.stats["waits_done"] += 1
    return done


def gather(ctx: RunningJob, children: Iterable[Job | int], *, fail: str = "fast") -> list[Any]:
    """The children's results in the order given. ``fail="fast"``: the first child that
    fails or is cancelled fails this job with that child's error code (``ChildJobFailed``),
    without waiting for the others. ``fail="collect"``: wait for all; a child that did not
    succeed comes back as a ``ChildFailure`` in its place."""
    return list(gather_iter(ctx, children, fail=fail))


def gather_iter(ctx: RunningJob, children: Iterable[Job | int], *, fail: str = "fast",
                page_size: int = 1000) -> Iterator[Any]:
    """``gather``, its results streamed: the wait (and a fail-fast ``ChildJobFailed``)
    happens in this call; the iterator then reads the children's results ``page_size`` at a
    time, in order, so however many children there are, one page is in memory at once."""
    if not isinstance(page_size, int) or page_size < 1:
        raise InvalidArgument(f"page_size must be an int >= 1, got {page_size!r}")
    ids = tuple(c.id if isinstance(c, Job) else int(c) for c in children)
    if not ids:
        return iter(())
    for i in ids:
        if i <= 0:
            raise InvalidArgument(f"not a job id: {i!r}")
    done = wait(ctx, WaitSpec(key=gather_key(ids), kind="children", children=ids,
                              fail_mode=fail))
    del ids
    if isinstance(done.value, list):  # a gather recorded with its results in its value
        return iter([_result(item, fail) for item in done.value])
    if done.outcome == "child_failed":
        _result(done.value["failed"], fail)
    return _pages(ctx, done.key, fail, page_size)


def _pages(ctx: RunningJob, key: str, fail: str, page_size: int) -> Iterator[Any]:
    after = 0
    while True:
        page = ctx.store.wait_results(ctx.id, key, after=after, limit=page_size)
        for item in page:
            yield _result(item, fail)
        if len(page) < page_size:
            return
        after = page[-1]["pos"] + 1


def _result(item: dict[str, Any], fail: str) -> Any:
    """A child's result, or its failure: raised under fail-fast, a ``ChildFailure`` else."""
    state = item.get("state")
    if state == "succeeded":
        return item.get("result")
    failure = ChildFailure(job_id=int(item["job_id"]), state=str(state),
                           error_code=item.get("error_code"),
                           error_summary=item.get("error_summary"))
    if fail == "fast" and state in ("failed", "cancelled"):
        raise ChildJobFailed(
            f"child job {failure.job_id} {state}: "
            f"{failure.error_summary or failure.error_code or 'no reason recorded'}",
            child_id=failure.job_id, child_code=failure.error_code or "child_failed")
    return failure


def sleep(ctx: RunningJob, duration: float | timedelta, *, key: str | None = None) -> None:
    """Wait ``duration`` by the store's clock, without a lease; survives worker restarts."""
    seconds = _seconds(duration, "sleep needs a duration")
    wait(ctx, WaitSpec(key=key or ctx.waits.next_sleep(), kind="timer", delay_s=seconds))


def sleep_until(ctx: RunningJob, when: datetime | float, *, key: str | None = None) -> None:
    """Wait until ``when`` (an aware datetime; naive means UTC) by the store's clock."""
    try:
        at = to_ts(when)
    except (TypeError, ValueError, AttributeError):
        raise InvalidArgument("sleep_until needs a datetime (or unix time) in the years 1 "
                              f"to 9999, got {when!r:.60}") from None
    wait(ctx, WaitSpec(key=key or ctx.waits.next_sleep(), kind="timer", wake_at=at))


def wait_for_signal(ctx: RunningJob, name: str, *, timeout: float | timedelta | None = None,
                    prompt: str | None = None, schema: Any = None, key: str | None = None,
                    callback: Callable[[cb.Callback], Any] | None = None,
                    callback_expires: float | timedelta | None = None) -> Any:
    """The value of the next signal ``name`` sent to this job (``app.signal``). A signal sent
    before the job got here is waiting in the mailbox and is taken at once; each signal is
    consumed by exactly one wait. ``timeout``: raise ``SignalTimeout`` if none came in time.
    ``prompt`` and ``schema`` are shown to whoever answers (status, REST, MCP, dashboard).

    ``callback``: called, before the job parks, with a ``Callback`` whose ``url`` answers
    this wait without an API token (a plain POST of the value; ``core/callbacks.py``): email
    it, post it to a third party. It expires after ``callback_expires`` (default: the
    ``timeout``, else seven days). Once ``callback`` has returned, a replay of this wait hands
    out no other; if the attempt ends before it returns, the next attempt makes a new one."""
    validate.signal_name(name)
    delay = None
    if timeout is not None:
        delay = _seconds(timeout, "timeout must be")
    opened = None
    if callback is not None:
        opened = partial(_hand_out, ctx, notify=callback,
                         expires_in=cb.expiry_seconds(callback_expires, default=delay))
    done = wait(ctx, WaitSpec(key=key or ctx.waits.next_signal(name), kind="signal",
                              signal=name, delay_s=delay, prompt=prompt, schema=schema),
                opened)
    if done.outcome == "timeout":
        raise SignalTimeout(f"no signal {name!r} within {delay:g}s", signal=name)
    return done.value


def _hand_out(ctx: RunningJob, wait: Wait, *, notify: Callable[[cb.Callback], Any],
              expires_in: float) -> None:
    """Make the wait's callback and hand it to ``notify``, unless one was handed out."""
    made = cb.new_token()
    url = cb.url(ctx.app.public_url, ctx.id, str(wait.signal), made.raw)
    issued = ctx.store.issue_callback(ctx.id, id=made.id, token_hash=made.digest,
                                      expires_in=expires_in, issued_by="job", key=wait.key,
                                      attempt=ctx.attempt)
    if issued is None:
        return
    notify(replace(issued, url=url))
    ctx.store.callback_handed(ctx.id, issued.id)


def _seconds(value: Any, what: str) -> float:
    """A duration in seconds, >= 0 (a timedelta or a number). A duration beyond the calendar
    (``inf`` included) is kept: the store wakes it at the calendar's end, year 9999."""
    try:
        seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    except OverflowError:  # an int too large for a float: beyond the calendar too
        seconds = float("inf") if value > 0 else float("nan")
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds >= 0:
        raise InvalidArgument(f"{what} >= 0 seconds, got {value!r:.60}")
    return seconds
