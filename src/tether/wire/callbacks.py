"""The wire shapes of callback URLs (pydantic v2): what REST and MCP take and answer.

``CallbackOut`` is one callback of a job's signal wait; its ``url`` is present only in the
answer that made it (only the token's hash is stored). ``CallbackRequest`` makes one;
``CallbackAnswer`` is what the public route ``POST /callbacks/{job_id}/{signal}/{token}``
answers: enough for the sender to know it was taken, nothing of the job's data.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from ..core.callbacks import Callback

EXPIRES_IN = Field(None, gt=0, le=10 * 365 * 24 * 3600, description=(
    "seconds until the callback expires (default seven days)"))


class CallbackOut(BaseModel):
    """One callback of a signal wait: who made it, until when it answers, whether it did."""

    id: str = Field(description="the callback's id (the token holds it; the token is secret)")
    job_id: int
    key: str = Field(description="the wait it answers (its key within the job)")
    signal: str
    issued_by: str = Field(description="job (the job's own callback=) or who made it")
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None
    state: str = Field(description="unused, used or expired")
    url: str | None = Field(None, description=(
        "the callback URL: only in the answer that made it (only its token's hash is kept)"))

    @classmethod
    def of(cls, made: Callback) -> CallbackOut:
        return cls(id=made.id, job_id=made.job_id, key=made.key, signal=made.signal,
                   issued_by=made.issued_by, created_at=made.created_at,
                   expires_at=made.expires_at, used_at=made.used_at, state=made.state,
                   url=made.url)


class CallbackList(BaseModel):
    items: list[CallbackOut]


class CallbackRequest(BaseModel):
    """``POST /jobs/{id}/callbacks``: a new callback URL for the job's open signal wait."""

    model_config = ConfigDict(extra="forbid")

    expires_in_s: float | None = EXPIRES_IN


class CallbackAnswer(BaseModel):
    """What a callback URL answers when it delivered its signal."""

    job_id: int
    signal: str
    callback: str = Field(description="the id of the callback that was used")
    state: str = Field(description="the job's state after the signal (queued if it waited)")
