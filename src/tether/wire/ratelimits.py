"""Shared rate-limit scopes on the wire (``GET /api/v1/rate-limits``): the calls and tokens
granted in the last minute, and what each scope's provider last said is left
(``core/headroom.py``; docs/flow-control.md)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from ..core.headroom import RateScope


class ProviderHeadroomOut(BaseModel):
    """What a scope's provider last said, from its rate-limit headers or a refusal."""

    observed_at: datetime = Field(description="when the call whose answer told this was "
                                              "granted")
    requests_limit: int | None = None
    requests_remaining: int | None = Field(None, description="as the provider told it")
    requests_reset_at: datetime | None = None
    tokens_limit: int | None = None
    tokens_remaining: int | None = Field(None, description="as the provider told it (the "
                                         "least of tokens, input and output tokens)")
    tokens_reset_at: datetime | None = None
    retry_at: datetime | None = Field(None, description="a refusal's Retry-After, until then "
                                                        "no call of the scope is made")
    requests_in_flight: int = Field(0, description="calls granted before the telling one and "
                                                   "unanswered then: counted as not yet told")
    tokens_in_flight: int = 0
    calls_since: int = Field(0, description="calls granted after the telling one")
    tokens_since: int = 0
    requests_left: int | None = Field(None, description=(
        "what calls may still take before the refill: remaining less calls since and in "
        "flight; null: not told, or refilled since"))
    tokens_left: int | None = None
    retry_in_s: float = Field(0.0, description="seconds a refusal still asks to wait")


class RateScopeOut(BaseModel):
    scope: str = Field(description="a provider, or provider/model")
    calls_last_minute: int
    tokens_last_minute: int = Field(description="reserved, or used once a call settled")
    provider: ProviderHeadroomOut | None = Field(None, description=(
        "null: no answer of this scope's provider has told its limits yet"))

    @classmethod
    def of(cls, scope: RateScope) -> RateScopeOut:
        return cls.model_validate(scope.to_dict())


class RateScopeList(BaseModel):
    items: list[RateScopeOut]
