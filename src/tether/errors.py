"""One exception tree with stable error codes.

Two roots, one vocabulary:

* ``TetherError`` (an ``Exception``) is everything that reports a problem: bad input, an invalid
  transition, a provider failure. Each class carries a stable ``code`` that is stored on jobs and
  attempts, returned by the API as the problem ``type`` and used by scripts.
* ``ControlSignal`` (a ``BaseException``) is how the engine stops job code at a safe boundary:
  cancel, pause, budget exhaustion, a lost lease, worker shutdown. They derive from
  ``BaseException`` so that a job's ``except Exception`` cannot swallow them; the context also
  remembers a raised signal, so even ``except BaseException`` in job code cannot hide it.
"""

from __future__ import annotations


class TetherError(Exception):
    """Root of every error tether raises on purpose."""

    code = "tether_error"

    def __init__(self, message: str = "", **details: object) -> None:
        super().__init__(message or self.__class__.__doc__ or self.code)
        self.message = message or (self.__class__.__doc__ or self.code).strip().splitlines()[0]
        self.details = details


# --- usage and state errors -------------------------------------------------------------------

class ConfigurationError(TetherError):
    """The engine or a job type is configured wrongly."""

    code = "configuration_error"


class NoDatabase(ConfigurationError):
    """No tether database at that URL, or one whose schema is older than this tether:
    ``tether db migrate`` creates or upgrades it. Opening a store with ``create=False`` (what
    the read-only interfaces do) never creates or migrates one itself."""

    code = "no_database"


class UnknownJobType(TetherError):
    """No job type of that name is registered."""

    code = "unknown_job_type"


class InvalidPayload(TetherError):
    """The payload (or result) cannot be stored: not JSON, too large, or malformed."""

    code = "invalid_payload"


class InvalidCall(TetherError):
    """A ``ctx.call`` was given arguments it cannot run with (raised before any reservation)."""

    code = "invalid_call"


class InvalidArgument(TetherError):
    """An argument is malformed: a bad name, a NUL character in text, an id out of range, a
    flag of the wrong kind. Nothing was changed."""

    code = "invalid_argument"


class InvalidIdempotencyKey(InvalidArgument):
    """An idempotency key must be 1 to 200 visible ASCII characters."""

    code = "invalid_idempotency_key"


class QueueNotFound(TetherError):
    """No queue of that name exists or is declared by a registered job type."""

    code = "queue_not_found"


class ScheduleNotFound(TetherError):
    """No schedule of that name (in the projects you may see)."""

    code = "schedule_not_found"


class WebhookNotFound(TetherError):
    """No webhook subscription or delivery with that id (in the projects you may see)."""

    code = "webhook_not_found"


class WebhookTargetRefused(InvalidArgument):
    """A webhook URL points where this app does not send: a private, loopback or link-local
    address (unless allowed), or a host outside the configured allow list."""

    code = "webhook_target_refused"


class JobNotFound(TetherError):
    """No job with that id (in the projects you may see)."""

    code = "job_not_found"


class JobStateError(TetherError):
    """The job's current state does not allow the requested transition."""

    code = "invalid_transition"


class CallbackRefused(TetherError):
    """A callback URL was refused; the signal was not delivered and the token not spent."""

    code = "callback_refused"


class CallbackNotFound(CallbackRefused):
    """No callback with this token for this job and signal (malformed, unknown, or another
    job's or signal's token)."""

    code = "callback_not_found"


class CallbackUsed(CallbackRefused):
    """The callback was used already: each callback URL answers once."""

    code = "callback_used"


class CallbackExpired(CallbackRefused):
    """The callback's expiry has passed."""

    code = "callback_expired"


class CallbackClosed(CallbackRefused):
    """The wait the callback answers is over (answered another way, timed out, or the job
    finished)."""

    code = "callback_closed"


class IdempotencyConflict(TetherError):
    """The idempotency key was already used for a job with a different configuration."""

    code = "idempotency_conflict"


class StoreError(TetherError):
    """The durable store failed (disk full, corrupt file, lost connection)."""

    code = "store_error"


class StoreCorrupt(StoreError):
    """The store's data is damaged (a corrupt SQLite file): retrying cannot help."""

    code = "store_corrupt"


class StorageFull(StoreError):
    """The store could not write because the disk (or file size limit) is full."""

    code = "storage_full"


class UnpricedModel(TetherError):
    """The price profile has no price for this provider and model; tether never assumes $0."""

    code = "unpriced_model"


class MissingExtra(TetherError):
    """A feature needs an optional part of tether that is not installed (``pip install
    'tether[<extra>]'``); ``extra`` names that part, so the fix is one command."""

    code = "missing_extra"

    def __init__(self, what: str, extra: str, *, module: str | None = None) -> None:
        super().__init__(f"{what} needs the {extra!r} extra: pip install 'tether[{extra}]'",
                         extra=extra, module=module)
        self.extra = extra


# --- failures raised by job code (classified by the retry policy) ----------------------------

class JobError(TetherError):
    """A failure inside job code; subclasses say how the engine should react."""

    code = "job_error"


class TransientError(JobError):
    """A failure worth retrying after a backoff: timeout, 429, connection reset, 5xx, overload."""

    code = "transient"

    def __init__(self, message: str = "", *, retry_after: float | None = None,
                 status: int | None = None, billed: bool | None = None, **details: object) -> None:
        super().__init__(message, **details)
        self.retry_after = retry_after
        self.status = status
        self.billed = billed if billed is not None else (False if status is not None else None)


class ProviderError(JobError):
    """A provider reported an error; retried only when ``retryable`` is true."""

    code = "provider_error"

    def __init__(self, message: str = "", *, retryable: bool = False,
                 retry_after: float | None = None, status: int | None = None,
                 billed: bool | None = None, **details: object) -> None:
        super().__init__(message, **details)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.billed = billed if billed is not None else (False if status is not None else None)


class ProviderAuthError(ProviderError):
    """The provider refused our credentials; the job pauses until an operator fixes them."""

    code = "provider_auth"


class PolicyBlock(JobError):
    """Content or policy forbids this work (PII, licence, refusal): fail at once, never retry.

    ``billed`` says whether the provider charged for the call that was refused (a refusal in
    an HTTP 200 body usually is billed; a request rejected up front is not)."""

    code = "policy_block"

    def __init__(self, message: str = "", *, billed: bool | None = None, **details: object) -> None:
        super().__init__(message, **details)
        self.billed = billed


class SignalTimeout(JobError):
    """``ctx.wait_for_signal`` timed out before the signal came; job code may handle it."""

    code = "signal_timeout"


class ChildJobFailed(JobError):
    """A child job a ``gather`` waited for did not succeed (``fail="fast"``). The parent fails
    with the child's own error code (``code`` is set per instance), not retried: retrying the
    parent would only gather the same failed child again."""

    code = "child_failed"

    def __init__(self, message: str = "", *, child_id: int | None = None,
                 child_code: str | None = None, **details: object) -> None:
        super().__init__(message, child_id=child_id, **details)
        self.child_id = child_id
        if child_code:
            self.code = child_code


# --- control signals ----------------------------------------------------------------------------

class ControlSignal(BaseException):
    """Stops job code at a safe boundary. Not an ``Exception``: job code cannot swallow it."""

    code = "control"

    def __init__(self, message: str = "", **details: object) -> None:
        super().__init__(message or self.code)
        self.message = message or self.code
        self.details = details


class JobCancelled(ControlSignal):
    """The job was cancelled; it stops at the next safe boundary."""

    code = "cancelled"


class JobPaused(ControlSignal):
    """The job was paused; it stops at the next safe boundary and keeps its checkpoints."""

    code = "paused"


class BudgetExhausted(ControlSignal):
    """A call's worst-case reservation would cross a budget limit; the job pauses."""

    code = "budget_exhausted"


class JournalMismatch(ControlSignal):
    """A replay found a journaled call or a checkpointed stage changed since it was recorded
    (another request, model or provider; another stage version): the job pauses, nothing is
    paid or returned, until an operator resumes it with a decision (``reuse`` or ``repay``)
    or the job type declares one (``job/replay.py``)."""

    code = "journal_mismatch"


class LeaseLost(ControlSignal):
    """This worker no longer holds the job's lease; it must write nothing more about it."""

    code = "lease_lost"


class JobWaiting(ControlSignal):
    """The job waits (children, a timer, a signal): its attempt ends here, without a lease,
    and the job is queued again when the wait is satisfied, then replays to this point."""

    code = "waiting"


class WorkerShutdown(ControlSignal):
    """The worker is draining; the job hands its lease back at a safe boundary."""

    code = "worker_shutdown"


ERROR_CODES: dict[str, type[BaseException]] = {
    cls.code: cls
    for cls in (
        TetherError, ConfigurationError, NoDatabase, UnknownJobType, InvalidPayload,
        InvalidCall, InvalidArgument, InvalidIdempotencyKey, QueueNotFound, ScheduleNotFound,
        JobNotFound, JobStateError, IdempotencyConflict, StoreError, StoreCorrupt, StorageFull,
        UnpricedModel, JobError, TransientError, ProviderError, ProviderAuthError, PolicyBlock,
        JobCancelled, JobPaused, BudgetExhausted, JournalMismatch, LeaseLost, WorkerShutdown,
        MissingExtra, SignalTimeout, ChildJobFailed, JobWaiting, CallbackRefused,
        CallbackNotFound, CallbackUsed, CallbackExpired, CallbackClosed,
    )
}
"""Every stable code and the class that carries it."""
