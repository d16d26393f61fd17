"""Outbound webhooks, the pure part: the public event kinds and how job events map to them,
the body each delivery sends, its identity, and the Standard Webhooks signature.

Signing follows the Standard Webhooks specification (https://www.standardwebhooks.com), so a
receiver can verify with any of its libraries: the headers ``webhook-id`` (the delivery id,
the same on every try and every re-send: deduplicate by it), ``webhook-timestamp`` (unix
seconds of this try) and ``webhook-signature`` (``v1,`` and the base64 HMAC-SHA256 of
``{id}.{timestamp}.{body}`` keyed by the secret's bytes: the base64 after ``whsec_``).
A receiver refuses a timestamp far from its own clock (``TOLERANCE_S``), which makes a
captured request useless for a replay later. docs/alerts.md ("Webhooks") is the reference.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from ..errors import InvalidArgument

JOB_SUCCEEDED = "job.succeeded"
JOB_FAILED = "job.failed"
JOB_BUDGET_PAUSED = "job.budget_paused"
JOB_WAITING_SIGNAL = "job.waiting_signal"
THRESHOLD_CROSSED = "budget.threshold_crossed"
SCHEDULE_MISSED = "schedule.missed"

KINDS = (JOB_SUCCEEDED, JOB_FAILED, JOB_BUDGET_PAUSED, JOB_WAITING_SIGNAL, THRESHOLD_CROSSED,
         SCHEDULE_MISSED)
"""Every public event kind a subscription may name; stable (receivers switch on them)."""

DELIVERY_TYPE = "tether.webhook"
"""The internal job type that delivers one webhook; its own events never become webhooks."""

DELIVERY_QUEUE = "webhooks"

TOLERANCE_S = 300
"""How far a receiver should let ``webhook-timestamp`` be from its clock (the spec's five
minutes)."""

SECRET_PREFIX = "whsec_"


@dataclass(frozen=True)
class OutboxStep:
    """What one outbox step did: the deliveries it made, and whether more events (or
    schedule misses) were waiting than it took."""

    made: int
    more: bool


@dataclass(frozen=True)
class Subscription:
    """A URL that receives the events of ``kinds`` of ``project`` (None: every project)."""

    id: str
    project: str | None
    url: str
    kinds: tuple[str, ...]
    secret: str
    description: str
    created_at: datetime

    def to_dict(self, *, secret: bool = False) -> dict[str, Any]:
        out = asdict(self)
        out["kinds"] = list(self.kinds)
        out["created_at"] = self.created_at.isoformat()
        if not secret:
            out.pop("secret")
        return out


@dataclass(frozen=True)
class DeliveryAttempt:
    """One HTTP try of a delivery: the status the receiver answered, or why there was none."""

    n: int
    job_id: int
    at: datetime
    status: int | None
    error: str | None
    duration_ms: float

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["at"] = self.at.isoformat()
        return out


@dataclass(frozen=True)
class Delivery:
    """One event sent to one subscription. ``state`` is its current delivery job's:
    ``queued``/``running``/``retry_wait`` pending, ``succeeded`` delivered, ``failed`` dead
    (every attempt used: re-send it), ``cancelled``; ``pruned`` for the moment between a
    prune deleting its job and deleting it. ``project`` is its event's; ``attempts`` (only
    when read one at a time) are every HTTP try of every sending, oldest first."""

    id: str
    subscription_id: str
    project: str
    kind: str
    url: str
    job_id: int
    sends: int
    state: str
    body: dict[str, Any]
    created_at: datetime
    attempts: list[DeliveryAttempt] = field(default_factory=list)

    @property
    def dead(self) -> bool:
        return self.state == "failed"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["created_at"] = self.created_at.isoformat()
        out["dead"] = self.dead
        out["attempts"] = [a.to_dict() for a in self.attempts]
        return out


def public_kind(kind: str, to_state: str | None, data: Mapping[str, Any],
                job_type: str) -> str | None:
    """The public kind a job event is delivered as, or None (not a webhook event). Events
    of delivery jobs are never delivered: a failed delivery must not make another."""
    if job_type == DELIVERY_TYPE:
        return None
    if kind == "budget_threshold":
        return THRESHOLD_CROSSED
    if to_state == "succeeded":
        return JOB_SUCCEEDED
    if to_state == "failed":
        return JOB_FAILED
    if to_state == "paused" and kind == "budget_exhausted":
        return JOB_BUDGET_PAUSED
    if to_state == "waiting" and data.get("wait") == "signal":
        return JOB_WAITING_SIGNAL
    return None


def check_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    """The kinds, deduplicated in order; ``invalid_argument`` for an unknown one or none."""
    out = tuple(dict.fromkeys(kinds))
    unknown = [k for k in out if k not in KINDS]
    if unknown or not out:
        raise InvalidArgument(f"webhook kinds must be some of {', '.join(KINDS)}; "
                              f"got {', '.join(unknown) or 'none'}", argument="kinds")
    return out


def check_url(url: str) -> str:
    """An absolute http(s) URL with a host and no credentials; ``invalid_argument`` else.
    Where it may point is decided at send time (``facade/webhook_targets.py``)."""
    if (not isinstance(url, str) or len(url) > 2000 or not url.isprintable()
            or any(c.isspace() for c in url)):
        raise InvalidArgument("a webhook URL must be text of at most 2000 characters",
                              argument="url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgument(f"a webhook URL must be http(s) with a host, not {url!r}",
                              argument="url")
    if parts.username or parts.password:
        raise InvalidArgument("a webhook URL must not carry credentials", argument="url")
    return url


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_subscription_id() -> str:
    return "sub_" + secrets.token_hex(12)


def delivery_id(subscription_id: str, event_ref: str) -> str:
    """The stable id of one event's delivery to one subscription (``webhook-id``): derived
    from both, so every outbox step that meets the pair names it the same."""
    digest = hashlib.sha256(f"{subscription_id}\n{event_ref}".encode()).hexdigest()
    return "msg_" + digest[:32]


def _key(secret: str) -> bytes:
    raw = secret[len(SECRET_PREFIX):] if secret.startswith(SECRET_PREFIX) else secret
    return base64.b64decode(raw)


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value of one try: ``v1,<base64 HMAC-SHA256>``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()
                                    ).decode()


def headers(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {"content-type": "application/json", "webhook-id": msg_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(secret, msg_id, timestamp, body),
            "user-agent": "tether-webhooks"}


def verify(secret: str, header: Mapping[str, str], body: bytes, *, now: float,
           tolerance_s: float = TOLERANCE_S) -> bool:
    """What a receiver does: the timestamp is within ``tolerance_s`` of ``now`` and one of
    the space-separated ``v1,`` signatures matches (compared in constant time)."""
    lower = {k.lower(): v for k, v in header.items()}
    try:
        msg_id, stamp = lower["webhook-id"], int(lower["webhook-timestamp"])
    except (KeyError, ValueError):
        return False
    if abs(now - stamp) > tolerance_s:
        return False
    want = signature(secret, msg_id, stamp, body)
    return any(hmac.compare_digest(want, sig)
               for sig in lower.get("webhook-signature", "").split())
