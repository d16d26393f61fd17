"""JobStore: exactly the store methods a running job uses, and nothing else.

A running job — its context, its calls, its stages, and the executor that starts and finishes
its attempt — reaches the store only through these methods. Every write names the lease
(``token``): a write under a lease that is no longer the job's fails with ``LeaseLost`` and
changes nothing. Both backends implement it; so does the worker's group-committing view
(``worker/committer.py``), which a test holds to this list.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from ..core.states import JobState
from ..core.usage import Usage
from ..records import Checkpoint, JournalEntry
from ..store.base import CallReserve, CallSettle, Outcome
from ..store.ratelimits import RateLimit

AccountOutcome = tuple[Any, BaseException | None]
"""What ``account`` reports per operation: its value, or the error that failed only it."""


class JobStore(Protocol):
    # the attempt
    def start(self, job_id: int, token: int, *, now: float | None = None) -> JobState: ...
    def finish(self, job_id: int, token: int, outcome: Outcome, *,
               now: float | None = None) -> JobState: ...
    def lease_state(self, job_id: int, token: int) -> JobState: ...
    def set_stage(self, job_id: int, token: int, stage: str | None) -> None: ...
    def append_event(self, job_id: int, kind: str, data: dict[str, Any], *,
                     token: int | None = None) -> int: ...
    def add_examples(self, job_id: int, token: int, n: int, *,
                     now: float | None = None) -> int: ...

    # calls: reserve and settle (``account``), release, the journal, the cache, rate limits
    def account(self, job_id: int, token: int, ops: Sequence[CallReserve | CallSettle], *,
                now: float | None = None) -> list[AccountOutcome]: ...
    def release(self, job_id: int, token: int, *, key: str, error_code: str,
                error_summary: str, billed: bool | None, now: float | None = None) -> None: ...
    def journal(self, job_id: int, key: str | None = None) -> list[JournalEntry]: ...
    def cached_result(self, project: str, request_hash: str) -> tuple[Any, Usage] | None: ...
    def record_cached(self, job_id: int, token: int, *, key: str, stage: str | None,
                      provider: str, model: str, request_hash: str, result_json: str,
                      usage: Usage) -> None: ...
    def acquire_rate(self, limits: Sequence[RateLimit], *, tokens: int, job_id: int, key: str,
                     now: float | None = None) -> float: ...
    def settle_rate(self, job_id: int, key: str, tokens: int) -> None: ...

    # stages
    def get_checkpoint(self, job_id: int, stage: str) -> Checkpoint | None: ...
    def save_checkpoint(self, job_id: int, token: int, *, stage: str, position: int,
                        blob: str, size: int, now: float | None = None) -> Checkpoint: ...
