"""Turn what provider SDKs raise (and refusals hidden in HTTP 200 bodies) into tether's
failure classes (docs/design.md, "Failures and retries"), so retries, pauses and spend follow
one policy.

| provider says | tether raises | engine does |
| --- | --- | --- |
| timeout, connection error | TransientError (billed unknown) | retry; reservation counted |
| 408, 409, 429, 500, 502, 503, 504, 529 | TransientError (status, Retry-After) | retry; refunded |
| 429 insufficient_quota, spend limit | BudgetExhausted | pause (budget_exhausted) |
| 401, 403 | ProviderAuthError | pause for the operator |
| content filter / refusal | PolicyBlock | fail, never retried |
| 400, 404, 413, 422 (e.g. context length) | ProviderError(retryable=False) | fail |

Works by duck typing on the shape the official ``openai`` and ``anthropic`` SDKs share
(``status_code``, ``response.headers``, ``body``), so neither SDK is imported here.
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    BudgetExhausted, PolicyBlock, ProviderAuthError, ProviderError, TetherError, TransientError,
)

TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "spend_limit_reached",
               "billing_not_active"}
POLICY_CODES = {"content_policy_violation", "content_filter", "moderation_blocked"}


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def retry_after_seconds(headers: Any) -> float | None:
    """Retry-After (seconds, or an HTTP date) or retry-after-ms, whichever the response has."""
    if headers is None:
        return None
    get = headers.get if hasattr(headers, "get") else (lambda k: None)
    ms = get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime
        import time
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _error_code(body: Any) -> str:
    err = _get(body, "error") if isinstance(body, dict) else None
    parts = [_get(err, "code"), _get(err, "type"), _get(body, "code"), _get(body, "type")]
    return " ".join(str(p) for p in parts if p)


def classify_exception(exc: BaseException) -> BaseException:
    """The tether error that stands for ``exc`` (``exc`` itself if it is already one)."""
    if isinstance(exc, (TetherError, BudgetExhausted)) or not isinstance(exc, Exception):
        return exc
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    message = f"{name}: {exc}"
    if status is None:
        if "Timeout" in name or "Connection" in name or name in ("ConnectError", "ReadError",
                                                                   "RemoteProtocolError"):
            return TransientError(message, billed=None)
        return exc
    response = getattr(exc, "response", None)
    retry_after = retry_after_seconds(getattr(response, "headers", None))
    code = _error_code(getattr(exc, "body", None))
    if any(c in code for c in QUOTA_CODES):
        return BudgetExhausted(f"provider quota or spend limit: {message}", limit="provider_quota",
                               scope="provider")
    if any(c in code for c in POLICY_CODES):
        return PolicyBlock(message, billed=False)
    if status in TRANSIENT_STATUS:
        return TransientError(message, status=status, retry_after=retry_after)
    if status in (401, 403):
        return ProviderAuthError(message, status=status)
    return ProviderError(message, retryable=False, status=status)


def refusal_in(value: Any) -> str | None:
    """A refusal or content filter reported inside a successful (HTTP 200) response body."""
    for choice in _get(value, "choices") or ():
        message = _get(choice, "message")
        if _get(message, "refusal"):
            return str(_get(message, "refusal"))
        if _get(choice, "finish_reason") == "content_filter":
            return "finish_reason=content_filter"
    if _get(value, "stop_reason") == "refusal":
        return "stop_reason=refusal"
    for item in _get(value, "output") or ():
        for part in _get(item, "content") or ():
            if _get(part, "type") == "refusal":
                return str(_get(part, "refusal") or "refusal")
    return None
