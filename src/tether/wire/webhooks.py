"""The wire shapes of webhooks (``/api/v1/webhooks``, ``/api/v1/deliveries``), shared by
REST, MCP and the dashboard."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.webhooks import Delivery, DeliveryAttempt, Subscription

Kind = Literal["job.succeeded", "job.failed", "job.budget_paused", "job.waiting_signal",
               "budget.threshold_crossed", "schedule.missed"]
DeliveryState = Literal["queued", "running", "retry_wait", "succeeded", "failed", "cancelled"]


class WebhookCreate(BaseModel):
    """``POST /webhooks``: subscribe a URL to event kinds."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2000,
                     description="http(s); private, loopback and link-local hosts are refused "
                                 "unless the server allows them")
    kinds: list[Kind] = Field(min_length=1, max_length=6)
    project: str | None = Field(None, min_length=1, max_length=200,
                                description="omitted: every project for an admin, else the "
                                            "token's only project")
    description: str = Field("", max_length=500)


class WebhookOut(BaseModel):
    id: str
    project: str | None = Field(description="null: every project")
    url: str
    kinds: list[str]
    description: str
    created_at: datetime

    @classmethod
    def of(cls, s: Subscription) -> WebhookOut:
        return cls(**s.to_dict())


class WebhookCreated(WebhookOut):
    secret: str = Field(description="the signing secret (whsec_...): shown only in this answer")

    @classmethod
    def of(cls, s: Subscription) -> WebhookCreated:
        return cls(**s.to_dict(secret=True))


class WebhookList(BaseModel):
    items: list[WebhookOut]


class AttemptOut(BaseModel):
    n: int
    job_id: int
    at: datetime
    status: int | None = Field(description="the receiver's HTTP status; null: no answer")
    error: str | None
    duration_ms: float

    @classmethod
    def of(cls, a: DeliveryAttempt) -> AttemptOut:
        return cls(**a.to_dict())


class DeliveryOut(BaseModel):
    id: str = Field(description="the webhook-id header: the same on every try and re-send")
    subscription_id: str
    project: str
    kind: str
    url: str
    job_id: int = Field(description="the delivery job of the latest sending")
    sends: int
    state: str = Field(description="the delivery job's state; failed: dead (re-send it)")
    dead: bool
    body: dict[str, Any]
    created_at: datetime
    attempts: list[AttemptOut]

    @classmethod
    def of(cls, d: Delivery) -> DeliveryOut:
        return cls(**{**d.to_dict(), "attempts": [AttemptOut.of(a) for a in d.attempts]})


class DeliveryList(BaseModel):
    items: list[DeliveryOut]
