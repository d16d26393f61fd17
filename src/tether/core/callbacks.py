"""Callback URLs: a capability to answer one signal wait of one job, without an API token.

A callback is made for an open signal wait (by the job's ``ctx.wait_for_signal(callback=)``
or by someone allowed to see the job). Its URL is
``{public_url}/callbacks/{job_id}/{signal}/{token}``; the token is ``tcb_<id>_<secret>``, the
secret 256 random bits. Only the SHA-256 of the whole token is stored, so the URL is shown
once, when it is made, and a copy of the database answers no job. The stored row records
the job, the wait and its signal, when it expires and when it was used.

``refusal`` decides, from the row alone, whether a presented token is honoured: the hash is
compared in constant time before anything else is looked at, and a token presented for
another job or another signal is refused exactly like an unknown one (its holder learns
nothing and the token is not spent). Pure; every backend agrees.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from ..errors import (CallbackClosed, CallbackExpired, CallbackNotFound, CallbackRefused,
                      CallbackUsed, ConfigurationError, InvalidArgument)

PREFIX = "tcb_"
DEFAULT_EXPIRY_S = 7 * 24 * 3600.0
"""A callback's lifetime when neither the caller nor the wait's timeout says otherwise."""

_TOKEN = re.compile(r"^tcb_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True)
class NewToken:
    """A token as it is made: ``raw`` goes into the URL once; ``digest`` is what is stored."""

    id: str
    raw: str
    digest: str


def new_token() -> NewToken:
    """A fresh token: a 64-bit id (to find the row) and a 256-bit secret."""
    cb_id = secrets.token_hex(8)
    raw = f"{PREFIX}{cb_id}_{secrets.token_urlsafe(32)}"
    return NewToken(cb_id, raw, digest(raw))


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_id(raw: str) -> str | None:
    """The id inside a well-formed token; None for anything else (refused as not found)."""
    m = _TOKEN.match(raw) if isinstance(raw, str) else None
    return m.group(1) if m else None


def base(public_url: str | None) -> str:
    """``public_url`` (the address the outside world reaches the API at:
    ``Tether(public_url=)`` or ``TETHER_PUBLIC_URL``) without a trailing slash;
    ``ConfigurationError`` without one."""
    if not public_url:
        raise ConfigurationError("a callback URL needs the API's public address: "
                                 "Tether(public_url=...) or TETHER_PUBLIC_URL")
    return public_url.rstrip("/")


def url(public_url: str | None, job_id: int, signal: str, raw: str) -> str:
    """The callback URL of token ``raw`` for ``job_id``'s ``signal``, under ``public_url``."""
    return f"{base(public_url)}/callbacks/{job_id}/{quote(signal, safe='')}/{raw}"


def expiry_seconds(value: Any, default: float | None = None) -> float:
    """A callback's lifetime in seconds (> 0; a timedelta or a number); ``default`` (else
    seven days) when ``value`` is None."""
    if value is None:
        return float(default) if default and default > 0 else DEFAULT_EXPIRY_S
    try:
        seconds = value.total_seconds() if hasattr(value, "total_seconds") else float(value)
    except (TypeError, ValueError, OverflowError):
        seconds = float("nan")
    if not 0 < seconds <= 10 * 365 * 24 * 3600:
        raise InvalidArgument(f"a callback's expiry must be more than 0 seconds and at most "
                              f"ten years, got {value!r:.60}", argument="expires_in")
    return seconds


def refusal(row: Mapping[str, Any] | None, *, raw: str, job_id: int, signal: str,
            now: float, answered: bool, wait_open: bool) -> CallbackRefused | None:
    """Why the token ``raw``, presented for ``job_id``'s ``signal``, is refused (None: it is
    honoured). ``row``: the stored callback its id names (seconds for times). ``answered``:
    another callback of the same wait was used already; ``wait_open``: the wait is still
    open and the job not finished."""
    stored = "" if row is None else str(row["token_hash"])
    match = hmac.compare_digest(stored.encode(), digest(raw).encode())
    if row is None or not match or int(row["job_id"]) != job_id or row["signal"] != signal:
        return CallbackNotFound(f"no callback with this token for job {job_id}'s signal "
                                f"{signal!r:.60}", job_id=job_id)
    if row.get("used_at") is not None:
        return CallbackUsed(f"this callback was used already (callback {row['id']})",
                            job_id=job_id, callback=row["id"])
    if now >= float(row["expires_at"]):
        return CallbackExpired(f"callback {row['id']} has expired", job_id=job_id,
                               callback=row["id"])
    if answered or not wait_open:
        return CallbackClosed(f"job {job_id} no longer waits for this answer (callback "
                              f"{row['id']})", job_id=job_id, callback=row["id"])
    return None


@dataclass(frozen=True)
class Callback:
    """One callback of a job's signal wait. ``url`` is set only where the callback was just
    made (it holds the token, which is stored hashed); ``state`` is ``unused``, ``used`` or
    ``expired`` (as of the read)."""

    id: str
    job_id: int
    key: str
    signal: str
    issued_by: str
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None
    state: str = "unused"
    url: str | None = field(default=None, repr=False)
    """Left out of ``repr``: a logged ``Callback`` does not leak its token."""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "job_id": self.job_id, "key": self.key, "signal": self.signal,
                "issued_by": self.issued_by, "created_at": self.created_at.isoformat(),
                "expires_at": self.expires_at.isoformat(),
                "used_at": self.used_at.isoformat() if self.used_at else None,
                "state": self.state, **({"url": self.url} if self.url else {})}


def state(used_at: Any, expires_at: float, now: float) -> str:
    if used_at is not None:
        return "used"
    return "expired" if now >= expires_at else "unused"
