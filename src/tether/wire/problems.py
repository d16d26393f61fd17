"""Problem codes and their HTTP statuses: the one vocabulary of errors every interface speaks.

A problem's ``type`` is ``urn:tether:problem:<code>`` and its ``code`` member is the bare code.
Codes come from ``tether.errors`` (``job_not_found``, ``invalid_transition``, ...) or name an
interface-level problem (``unauthorized``, ``forbidden``, ``validation_error``,
``payload_too_large``, ``invalid_idempotency_key``, ...). Codes are stable: scripts may branch
on them. REST answers
them as RFC 9457 documents, MCP as tool errors carrying the same code.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:tether:problem:"

STATUS_BY_CODE: dict[str, int] = {
    # raised by the library (tether.errors)
    "invalid_idempotency_key": 400,
    "job_not_found": 404,
    "queue_not_found": 404,
    "schedule_not_found": 404,
    "webhook_not_found": 404,
    "invalid_transition": 409,
    "callback_refused": 403,
    "callback_not_found": 404,
    "callback_used": 410,
    "callback_expired": 410,
    "callback_closed": 409,
    "idempotency_conflict": 422,
    "invalid_argument": 422,
    "invalid_call": 422,
    "invalid_payload": 422,
    "unknown_job_type": 422,
    "unpriced_model": 422,
    "webhook_target_refused": 422,
    "tether_error": 500,
    "configuration_error": 500,
    "missing_extra": 500,
    "store_error": 503,
    "no_database": 503,
    "store_unavailable": 503,
    "store_corrupt": 503,
    "storage_full": 507,
    # raised by the interfaces
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "not_acceptable": 406,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "validation_error": 422,
    "too_many_waits": 429,
    "too_many_streams": 429,
    "internal_error": 500,
}
"""The one table: the HTTP status of every problem code (docs/errors.md lists the same).
A ``TetherError`` whose code is missing here answers 500."""

TITLES: dict[int, str] = {
    400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found",
    405: "Method not allowed", 409: "Conflict", 410: "Gone", 413: "Payload too large",
    415: "Unsupported media type", 422: "Unprocessable content", 429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable", 507: "Insufficient storage",
}

HTTP_CODES: dict[int, str] = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 406: "not_acceptable", 413: "payload_too_large",
    415: "unsupported_media_type", 422: "validation_error",
}
"""The code of an HTTP error raised by the framework itself (no route, wrong method, ...)."""


class Problem(Exception):
    """Raise from a route to answer with a problem document."""

    def __init__(self, status: int, code: str, detail: str, *, title: str | None = None,
                 headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.title = title or TITLES.get(status, "Error")
        self.headers = headers
        self.extra = extra


def problem_body(status: int, code: str, detail: str, *, title: str | None = None,
                 instance: str | None = None, **extra: Any) -> dict[str, Any]:
    """One RFC 9457 problem document as a dict."""
    body: dict[str, Any] = {"type": TYPE_PREFIX + code,
                            "title": title or TITLES.get(status, "Error"),
                            "status": status, "detail": detail, "code": code}
    if instance:
        body["instance"] = instance
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


class FieldError(BaseModel):
    field: str = Field(description="dotted path of the invalid field, e.g. budget.max_calls")
    # "in" is a Python keyword; the alias keeps the wire name.
    location: str = Field(alias="in", description="body, query, path or header")
    message: str


class ProblemOut(BaseModel):
    """An RFC 9457 problem document (``application/problem+json``)."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="urn:tether:problem:<code>")
    title: str
    status: int
    detail: str
    code: str = Field(description="stable machine-readable code, e.g. job_not_found")
    instance: str | None = None
    errors: list[FieldError] | None = None
    job_id: int | None = None
    argument: str | None = Field(None, description="invalid_argument: which argument")
    limit: int | None = Field(None, description="payload_too_large, too_many_waits: the limit")
