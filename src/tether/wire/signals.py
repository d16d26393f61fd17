"""The wire shapes of signals and waits (pydantic v2): what REST and MCP take and answer.

``SignalBody`` is a request and forbids unknown fields. ``WaitingForOut`` is the optional
``waiting_for`` member of a waiting job (``JobOut``); ``WaitOut`` is one row of
``GET /jobs/{id}/waits``. A wait's ``schema`` is the JSON the job gave
``ctx.wait_for_signal(schema=...)``; it is shown to whoever answers and not enforced.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..facade.workflows import WaitingFor
from ..records import Wait

SIGNAL_NAME = Field(min_length=1, max_length=200, description=(
    "the signal's name (1-200 printable characters other than /, not . or ..), as the job's "
    "ctx.wait_for_signal names it"))
_SCHEMA = Field(None, alias="schema", description=(
    "the JSON the job gave as schema= (e.g. a JSON Schema of the expected value); "
    "shown to whoever answers, not enforced"))


class SignalBody(BaseModel):
    """``POST /jobs/{id}/signals/{name}``: the signal's value (any JSON; absent means null)."""

    model_config = ConfigDict(extra="forbid")

    value: Any = Field(None, description="any JSON value; the waiting job's "
                                         "ctx.wait_for_signal returns it")


class WaitingForOut(BaseModel):
    """What a waiting job is blocked on: ``kind`` ``signal`` (``signal``, ``prompt``,
    ``schema``; ``wake_at`` is its timeout), ``timer`` (``wake_at``) or ``children``
    (``children`` in all, ``children_done`` finished)."""

    model_config = ConfigDict(populate_by_name=True)

    kind: str = Field(description="signal, timer, children or provider_batch")
    key: str = Field(description="the wait's key within the job")
    signal: str | None = Field(None, description="the signal it waits for")
    prompt: str | None = Field(None, description="the question for whoever answers")
    schema_: Any = _SCHEMA
    wake_at: datetime | None = Field(None, description="a timer's wake time; a signal "
                                                       "wait's deadline (null: none)")
    children: int | None = Field(None, description="children gathered")
    children_done: int | None = Field(None, description="of those, finished")
    since: datetime | None = Field(None, description="when the job began this wait")
    batch: dict[str, Any] | None = Field(None, description=(
        "a provider_batch wait's batch: provider, remote_id, status, items_total, "
        "items_done, items_failed, reserved_usd, settled_usd, standard_usd (the same usage at "
        "the standard price)"))

    callbacks: list[dict[str, Any]] = Field(default_factory=list, description=(
        "a signal wait's callback URLs (docs/alerts.md, Callback URLs): id, issued_by, "
        "created_at, expires_at, used_at, state (unused, used, expired); never the URL, "
        "which only the answer that made it holds"))

    @classmethod
    def of(cls, waiting: WaitingFor) -> WaitingForOut:
        return cls(kind=waiting.kind, key=waiting.key, signal=waiting.signal,
                   prompt=waiting.prompt, schema_=waiting.schema, wake_at=waiting.wake_at,
                   children=waiting.children, children_done=waiting.children_done,
                   since=waiting.since, batch=waiting.batch,
                   callbacks=list(waiting.callbacks))


class WaitOut(BaseModel):
    """One wait of a job (a gather, a timer, a signal wait), open or done."""

    model_config = ConfigDict(populate_by_name=True)

    job_id: int
    key: str
    kind: str = Field(description="signal, timer or children")
    status: str = Field(description="open or done")
    attempt: int = Field(description="the attempt that last reached this wait")
    created_at: datetime
    wake_at: datetime | None = None
    children: list[int] = Field(default_factory=list, description="a gather's child job ids")
    fail_mode: str | None = Field(None, description="a gather's: fast or collect")
    signal: str | None = None
    prompt: str | None = None
    schema_: Any = _SCHEMA
    outcome: str | None = Field(None, description="once done: received, timeout, fired, "
                                                  "children_done, children_failed, "
                                                  "child_failed")
    value: Any = Field(None, description="once done: what the job's replay receives")
    done_at: datetime | None = None

    @classmethod
    def of(cls, wait: Wait) -> WaitOut:
        return cls(job_id=wait.job_id, key=wait.key, kind=wait.kind, status=wait.status,
                   attempt=wait.attempt, created_at=wait.created_at, wake_at=wait.wake_at,
                   children=list(wait.children), fail_mode=wait.fail_mode, signal=wait.signal,
                   prompt=wait.prompt, schema_=wait.schema, outcome=wait.outcome,
                   value=wait.value, done_at=wait.done_at)


class WaitList(BaseModel):
    items: list[WaitOut]


class BatchOut(BaseModel):
    """One provider batch of a job (``ctx.batch``): its provider id, its items, and its money
    at the batch price beside what the same usage would cost at the standard price."""

    key: str
    provider: str
    model: str
    status: str = Field(description="submitting, submitted, settled or unconfirmed")
    remote_id: str | None = Field(None, description="the provider's batch id")
    remote_status: str | None = Field(None, description="the provider's last reported state")
    items_total: int
    items_done: int
    items_failed: int
    reserved_usd: str = Field(description="every item's worst case at the batch price")
    settled_usd: str | None = Field(None, description="what it cost, once settled")
    standard_usd: str | None = Field(None, description="the same usage at the standard price")
    polls: int
    error: str | None = None
    created_at: datetime
    settled_at: datetime | None = None


class BatchList(BaseModel):
    items: list[BatchOut]

