"""The store's callback URL methods as a protocol of their own (``store/callbacks.py`` holds
them); ``Store`` (``base.py``) includes it, so both backends are held to these signatures."""

from __future__ import annotations

from typing import Any, Protocol
from collections.abc import Iterable

from ..core.callbacks import Callback
from ..records import Job


class CallbackRows(Protocol):
    def issue_callback(self, job_id: int, *, id: str, token_hash: str, expires_in: float,
                       issued_by: str, key: str | None = None, attempt: int | None = None,
                       projects: Iterable[str] | None = None,
                       now: float | None = None) -> Callback | None: ...
    def callback_handed(self, job_id: int, id: str, *, now: float | None = None) -> None: ...
    def callbacks(self, job_id: int, *, key: str | None = None,
                  projects: Iterable[str] | None = None,
                  now: float | None = None) -> list[Callback]: ...
    def check_callback(self, job_id: int, signal: str, raw: str, *,
                       now: float | None = None) -> Callback: ...
    def answer_callback(self, job_id: int, signal: str, raw: str, value: Any = None, *,
                        now: float | None = None) -> Job: ...
