"""Failure classification and backoff (docs/design.md, "Failures and retries").

``classify`` turns whatever job code raised into a ``Decision``: retry after a delay, fail now,
or pause for an operator. The policy is pure: the caller passes the attempt number and a random
source, so tests pin the jitter.
"""

from __future__ import annotations

import random as _random
from dataclasses import dataclass
from collections.abc import Callable

from ..errors import (
    JobError, PolicyBlock, ProviderAuthError, ProviderError, StoreError, TetherError,
    TransientError,
)

BASE_S = 1.0
FACTOR = 2.0
CAP_S = 60.0
SUMMARY_MAX = 2000


@dataclass(frozen=True)
class RetryPolicy:
    """How a job type retries. ``retry_unknown`` opts plain exceptions (bugs) into retries."""

    base_s: float = BASE_S
    factor: float = FACTOR
    cap_s: float = CAP_S
    retry_unknown: bool = False
    retry_on: tuple[type[BaseException], ...] = ()

    def backoff(self, attempt: int, *, retry_after: float | None = None,
                rand: Callable[[], float] = _random.random) -> float:
        """Full jitter: uniform(0, min(cap, base*factor^(attempt-1))), never before Retry-After."""
        ceiling = min(self.cap_s, self.base_s * self.factor ** max(0, attempt - 1))
        delay = rand() * ceiling
        if retry_after is not None:
            delay = max(delay, float(retry_after))
        return delay


@dataclass(frozen=True)
class Decision:
    """What to do with a failed attempt: ``retry`` (with delay), ``fail`` or ``pause``."""

    action: str
    error_code: str
    error_summary: str
    delay_s: float = 0.0


def summarize(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1] + "…"


def error_code_of(exc: BaseException) -> str:
    return exc.code if isinstance(exc, TetherError) else "unhandled_error"


def classify(exc: BaseException, *, attempt: int, max_attempts: int,
             policy: RetryPolicy = RetryPolicy(),
             rand: Callable[[], float] = _random.random) -> Decision:
    """Decide the fate of an attempt that raised ``exc`` (attempt numbers start at 1)."""
    code = error_code_of(exc)
    summary = summarize(exc)
    retryable: bool
    retry_after: float | None = getattr(exc, "retry_after", None)
    if isinstance(exc, PolicyBlock):
        return Decision("fail", code, summary)
    if isinstance(exc, ProviderAuthError):
        return Decision("pause", code, summary)
    if isinstance(exc, TransientError):
        retryable = True
    elif isinstance(exc, ProviderError):
        retryable = exc.retryable
    elif isinstance(exc, JobError):
        retryable = False
    elif isinstance(exc, StoreError):  # the store failed under the job (disk full, DB down)
        retryable = True
    elif policy.retry_on and isinstance(exc, policy.retry_on):
        retryable = True
    else:
        retryable = policy.retry_unknown and not isinstance(exc, TetherError)
    if retryable and attempt < max_attempts:
        return Decision("retry", code, summary,
                        policy.backoff(attempt, retry_after=retry_after, rand=rand))
    return Decision("fail", code, summary)
