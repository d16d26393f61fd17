"""The job state machine: one transition table that the engine and every store obey.

docs/design.md draws the table and says why each edge exists: the lifecycle plus the edges a
careful operator expects: a queued, waiting or retry_wait job can be paused or cancelled at once
(a waiting job holds no lease: ``running -> waiting -> queued``), a claimed-but-not-started job
can be cancelled or paused, a dead worker's ``cancelling``/``pausing`` job settles to
``cancelled``/``paused``, a budget stop moves ``running`` straight to ``paused``, and a job
whose attempts are used up fails.
"""

from __future__ import annotations

from enum import StrEnum

from ..errors import JobStateError


class JobState(StrEnum):
    QUEUED = "queued"
    LEASED = "leased"
    RUNNING = "running"
    RETRY_WAIT = "retry_wait"
    WAITING = "waiting"
    PAUSING = "pausing"
    PAUSED = "paused"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


S = JobState

TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    S.QUEUED: frozenset({S.LEASED, S.CANCELLED, S.PAUSED}),
    S.LEASED: frozenset({S.RUNNING, S.QUEUED, S.CANCELLING, S.PAUSING, S.FAILED}),
    S.RUNNING: frozenset({
        S.SUCCEEDED, S.FAILED, S.RETRY_WAIT, S.PAUSING, S.PAUSED, S.CANCELLING, S.QUEUED,
        S.INTERRUPTED, S.WAITING,
    }),
    S.RETRY_WAIT: frozenset({S.QUEUED, S.CANCELLED, S.PAUSED}),
    S.WAITING: frozenset({S.QUEUED, S.CANCELLED, S.PAUSED}),
    S.PAUSING: frozenset({S.PAUSED, S.CANCELLING, S.SUCCEEDED, S.FAILED}),
    S.PAUSED: frozenset({S.QUEUED, S.CANCELLED}),
    S.CANCELLING: frozenset({S.CANCELLED}),
    S.INTERRUPTED: frozenset({S.QUEUED, S.CANCELLED}),
    S.FAILED: frozenset({S.QUEUED}),
    S.SUCCEEDED: frozenset(),
    S.CANCELLED: frozenset(),
}

TERMINAL = frozenset({S.SUCCEEDED, S.FAILED, S.CANCELLED})
"""States a job never leaves on its own (``failed`` leaves only by explicit retry)."""

LEASED_STATES = frozenset({S.LEASED, S.RUNNING, S.PAUSING, S.CANCELLING})
"""States in which a worker holds the job's lease."""

CANCELLABLE_AT_ONCE = frozenset({S.QUEUED, S.RETRY_WAIT, S.WAITING, S.PAUSED, S.INTERRUPTED})
PAUSABLE_AT_ONCE = frozenset({S.QUEUED, S.RETRY_WAIT, S.WAITING})


def can_transition(src: JobState | str, dst: JobState | str) -> bool:
    return JobState(dst) in TRANSITIONS[JobState(src)]


def check_transition(src: JobState | str, dst: JobState | str, job_id: object = None) -> None:
    """Raise ``JobStateError`` unless ``src -> dst`` is in the table."""
    if not can_transition(src, dst):
        where = f"job {job_id}: " if job_id is not None else ""
        raise JobStateError(f"{where}cannot move from {src} to {dst}",
                            job_id=job_id, state=str(src), to=str(dst))


def check_all(sources: set[JobState] | frozenset[JobState], dst: JobState) -> None:
    """A compare-and-set names the states it accepts; each must allow ``dst``."""
    for src in sources:
        check_transition(src, dst)


# --- decisions the store makes under the row lock (pure, so every backend agrees) -------------

OPERATOR_ACTIONS = ("cancel", "pause", "resume", "retry", "requeue")


def operator_target(action: str, current: JobState | str) -> JobState:
    """Where an operator's ``action`` moves a job that is in ``current``; else JobStateError."""
    cur = JobState(current)
    target: JobState | None = None
    if action == "cancel":
        if cur in CANCELLABLE_AT_ONCE:
            target = S.CANCELLED
        elif cur in (S.LEASED, S.RUNNING, S.PAUSING):
            target = S.CANCELLING
    elif action == "pause":
        if cur in PAUSABLE_AT_ONCE:
            target = S.PAUSED
        elif cur in (S.LEASED, S.RUNNING):
            target = S.PAUSING
    elif action == "resume":
        target = S.QUEUED if cur == S.PAUSED else None
    elif action == "retry":
        target = S.QUEUED if cur == S.FAILED else None
    elif action == "requeue":
        target = S.QUEUED if cur in (S.INTERRUPTED, S.PAUSED, S.FAILED) else None
    else:
        raise ValueError(f"unknown operator action {action!r}")
    if target is None:
        raise JobStateError(f"cannot {action} a job that is {cur}", state=str(cur), action=action)
    check_transition(cur, target)
    return target


def finish_target(current: JobState | str, desired: JobState | str) -> JobState:
    """The state a worker's outcome lands in, given what operators did meanwhile.

    A cancel recorded while the job ran wins over any finish except a finished success
    racing a *pause* (the work is done; pausing it would only hide the result).
    """
    cur, want = JobState(current), JobState(desired)
    if cur == S.CANCELLING:
        return S.CANCELLED
    if cur == S.PAUSING and want in (S.RETRY_WAIT, S.QUEUED, S.WAITING, S.PAUSED,
                                      S.CANCELLED):
        return S.PAUSED if want != S.CANCELLED else S.CANCELLING
    return want


def expiry_target(current: JobState | str, *, safe_to_retry: bool,
                  attempts_left: bool) -> tuple[JobState, str | None]:
    """Where a job goes when its worker's lease expires, and the error code it records."""
    cur = JobState(current)
    if cur == S.CANCELLING:
        return S.CANCELLED, None
    if cur == S.PAUSING:
        return S.PAUSED, None
    if not attempts_left:
        return S.FAILED, "interrupted"
    if cur == S.LEASED or safe_to_retry:
        return S.QUEUED, None
    return S.INTERRUPTED, "interrupted"
