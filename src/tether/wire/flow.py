"""The wire shapes of flow control (``/api/v1/types``, ``/api/v1/limits``), shared by REST,
MCP and the dashboard."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .numbers import INT32
from ..fleet import FlowLimit, FlowUsage, TypeInfo

Scope = Literal["queue", "type"]


class TypeOut(BaseModel):
    name: str
    paused: bool = Field(description="workers claim no job of a paused type")
    counts: dict[str, int] = Field(description="jobs of this type by state")

    @classmethod
    def of(cls, info: TypeInfo) -> TypeOut:
        return cls(name=info.name, paused=info.paused, counts=dict(info.counts))


class TypeList(BaseModel):
    items: list[TypeOut]


class LimitIn(BaseModel):
    """``PUT /limits/{scope}/{name}``: the limit, replacing the one it had."""

    model_config = ConfigDict(extra="forbid")

    per_key: int | None = Field(None, ge=1, le=INT32,
                                description="at most this many running jobs per key")
    total: int | None = Field(None, ge=1, le=INT32,
                              description="at most this many running jobs in all")
    key: str | None = Field(None, min_length=1, max_length=100,
                            description="the payload field that is the key (default: project)")


class LimitOut(BaseModel):
    scope: Scope
    name: str
    key: str | None = Field(description="the payload field that is the key; null: the project")
    per_key: int | None
    total: int | None

    @classmethod
    def of(cls, limit: FlowLimit) -> LimitOut:
        return cls(scope=limit.scope, name=limit.name, key=limit.key,  # type: ignore[arg-type]
                   per_key=limit.per_key, total=limit.total)


class UsageOut(BaseModel):
    scope: Scope
    name: str
    key: str | None = Field(description="the key's value; null: the row of the whole limit")
    running: int = Field(description="jobs holding a slot now (leased, running, pausing, "
                                     "cancelling)")
    limit: int | None = Field(description="the per-key limit, or the total for the null key")

    @classmethod
    def of(cls, usage: FlowUsage) -> UsageOut:
        return cls(scope=usage.scope, name=usage.name, key=usage.key,  # type: ignore[arg-type]
                   running=usage.running, limit=usage.limit)


class LimitList(BaseModel):
    items: list[LimitOut]
    usage: list[UsageOut] = Field(description="running / limit: each limit's total row "
                                              "(key null), then one row per key holding a slot")
