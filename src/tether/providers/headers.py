"""Reading a provider's rate-limit headers into ``Headroom`` (``core/headroom.py``).

* OpenAI (and OpenAI-compatible servers): ``x-ratelimit-limit-requests``,
  ``x-ratelimit-remaining-requests``, ``x-ratelimit-reset-requests`` and the same for
  ``-tokens``; a reset is a duration such as ``6m0s``, ``1s`` or ``20ms``.
* Anthropic: ``anthropic-ratelimit-requests-{limit,remaining,reset}`` and the same for
  ``tokens``, ``input-tokens`` and ``output-tokens``; a reset is an RFC 3339 time, turned into
  a duration against the response's own ``Date`` (so neither clock's skew matters), or this
  machine's clock when the response has none.
* ``Retry-After`` (seconds or an HTTP date) and ``retry-after-ms``, on any response.

Headers are any mapping with a case-insensitive ``get`` (``httpx.Headers``, what the SDKs'
raw responses and errors carry) or a plain dict. A value that does not parse is ignored.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from ..core.headroom import Headroom
from .classify import retry_after_seconds

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_ANTHROPIC = "anthropic-ratelimit-"
_OPENAI = "x-ratelimit-"


def duration_s(text: str) -> float | None:
    """``6m0s``, ``1h2m``, ``1.5s``, ``20ms`` or plain seconds as seconds; None if neither."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _int(value: Any) -> int | None:
    try:
        return max(0, int(str(value).strip()))
    except (TypeError, ValueError):
        return None


def _getter(headers: Any) -> Any:
    if isinstance(headers, dict):
        lowered = {str(k).lower(): v for k, v in headers.items()}
        return lowered.get
    return headers.get


def headroom_from(headers: Any, *, wall_now: float | None = None) -> Headroom | None:
    """The rate-limit headers of one response, or None when it has none. ``wall_now``: this
    machine's time (default: now), used only for an Anthropic reset without a ``Date``."""
    if headers is None or not hasattr(headers, "get"):
        return None
    get = _getter(headers)
    retry = retry_after_seconds(headers)
    if get(f"{_OPENAI}remaining-requests") is not None or \
            get(f"{_OPENAI}remaining-tokens") is not None:
        found = _openai(get)
    elif any(get(f"{_ANTHROPIC}{kind}-remaining") is not None
             for kind in ("requests", "tokens", "input-tokens", "output-tokens")):
        found = _anthropic(get, wall_now)
    else:
        found = Headroom()
    out = Headroom(**{**found.__dict__, "retry_after_s": retry})
    return None if out.empty else out


def _openai(get: Any) -> Headroom:
    def reset(kind: str) -> float | None:
        value = get(f"{_OPENAI}reset-{kind}")
        return duration_s(value) if value else None
    return Headroom(requests_limit=_int(get(f"{_OPENAI}limit-requests")),
                    requests_remaining=_int(get(f"{_OPENAI}remaining-requests")),
                    requests_reset_s=reset("requests"),
                    tokens_limit=_int(get(f"{_OPENAI}limit-tokens")),
                    tokens_remaining=_int(get(f"{_OPENAI}remaining-tokens")),
                    tokens_reset_s=reset("tokens"))


def _anthropic(get: Any, wall_now: float | None) -> Headroom:
    base = _server_time(get("date"))
    if base is None:
        base = time.time() if wall_now is None else wall_now

    def reset(kind: str) -> float | None:
        value = get(f"{_ANTHROPIC}{kind}-reset")
        if not value:
            return None
        try:
            return max(0.0, datetime.fromisoformat(value.strip()).timestamp() - base)
        except ValueError:
            return None

    tokens: tuple[int, int | None, float | None] | None = None
    for kind in ("tokens", "input-tokens", "output-tokens"):
        left = _int(get(f"{_ANTHROPIC}{kind}-remaining"))
        if left is not None and (tokens is None or left < tokens[0]):
            tokens = (left, _int(get(f"{_ANTHROPIC}{kind}-limit")), reset(kind))
    return Headroom(requests_limit=_int(get(f"{_ANTHROPIC}requests-limit")),
                    requests_remaining=_int(get(f"{_ANTHROPIC}requests-remaining")),
                    requests_reset_s=reset("requests"),
                    tokens_limit=tokens[1] if tokens else None,
                    tokens_remaining=tokens[0] if tokens else None,
                    tokens_reset_s=tokens[2] if tokens else None)


def _server_time(value: Any) -> float | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None


def response_headers(raw: Any) -> Any:
    """The headers a call's return value or exception carries: an SDK raw response
    (``with_raw_response``), an SDK error's ``response``, or ``Metered(headers=...)``."""
    headers = getattr(raw, "headers", None)
    if headers is not None:
        return headers
    return getattr(getattr(raw, "response", None), "headers", None)
