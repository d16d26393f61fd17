"""Tool errors that carry the stable code REST would give.

A failed call is an MCP tool result with ``isError: true`` whose text starts with the code
(``job_not_found: job 12 not found``) and whose structured content is the RFC 9457 problem
document REST answers for the same failure (``code``, ``status``, ``detail``, and ``errors``
naming each invalid argument). Agents and scripts branch on ``code``; the codes are
``tether.wire.problems``'s and ``tether.errors``'s, one table for every interface.
"""

from __future__ import annotations

import difflib
import logging
from typing import Any
from collections.abc import Iterable

from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from ..errors import TetherError
from ..wire.problems import STATUS_BY_CODE, Problem, problem_body

log = logging.getLogger("tether.mcp")


def error_result(status: int, code: str, detail: str, *, title: str | None = None,
                 **extra: Any) -> CallToolResult:
    """An ``isError`` result: text ``"<code>: <detail>"``, structured content the problem."""
    return CallToolResult(content=[TextContent(type="text", text=f"{code}: {detail}")],
                          structured_content=problem_body(status, code, detail, title=title,
                                                          **extra),
                          is_error=True)


def from_exception(tool: str, exc: BaseException) -> CallToolResult:
    """The error result for what a tool body raised: a tether error or an interface problem
    keeps its code; anything else is an ``internal_error`` whose text stays in the log."""
    if isinstance(exc, Problem):
        return error_result(exc.status, exc.code, exc.detail, title=exc.title, **exc.extra)
    if isinstance(exc, TetherError):
        status = STATUS_BY_CODE.get(exc.code, 500)
        if status >= 500:
            log.error("tool %s: %s (%s)", tool, exc.message, exc.code)
        job_id = exc.details.get("job_id") if exc.details else None
        extra = {"job_id": job_id} if isinstance(job_id, int) and exc.code != "job_not_found" \
            else {}
        doc = (type(exc).__doc__ or "").strip()
        return error_result(status, exc.code, exc.message,
                            title=doc.splitlines()[0] if doc else None, **extra)
    log.error("tool %s failed", tool, exc_info=(type(exc), exc, exc.__traceback__))
    return error_result(500, "internal_error", "the server failed to handle this call")


def from_validation(tool: str, exc: ValidationError, known: Iterable[str]) -> CallToolResult:
    """``validation_error`` naming every invalid argument; an unknown argument is named with
    the closest known one, so a typo is easy to fix and never silently dropped."""
    known = list(known)
    errors = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err.get("loc", ())) or "arguments"
        if err.get("type") == "extra_forbidden":
            message = f"unknown argument {field!r}"
            if "." not in field:
                close = difflib.get_close_matches(field, known, n=1, cutoff=0.5)
                message += f" (did you mean {close[0]!r}?)" if close else \
                    f" ({tool} takes {', '.join(known) or 'no arguments'})"
        else:
            message = str(err.get("msg", "invalid value"))
        errors.append({"field": field, "in": "arguments", "message": message})
    first = errors[0] if errors else {"field": "arguments", "message": "invalid arguments"}
    detail = first["message"] if first["message"].startswith("unknown argument") \
        else f"{first['field']}: {first['message']}"
    return error_result(422, "validation_error", detail, errors=errors or None)
