"""RFC 9457 problem details: every error the API returns is ``application/problem+json``.

The codes and their statuses are ``tether.wire.problems``; this module turns failures into
responses.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ..errors import TetherError
from ..wire.problems import (HTTP_CODES, MEDIA_TYPE, STATUS_BY_CODE, TITLES, Problem, problem_body)
from .redact import redact

log = logging.getLogger("tether.api")


def problem_response(status: int, code: str, detail: str, *, title: str | None = None,
                     instance: str | None = None, headers: dict[str, str] | None = None,
                     **extra: Any) -> JSONResponse:
    """A ``JSONResponse`` carrying one problem document."""
    body = problem_body(status, code, detail, title=title, instance=instance, **extra)
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def _field(loc: tuple[Any, ...] | list[Any]) -> tuple[str, str]:
    """(location, dotted field) from a pydantic error location such as ("body", "budget", "x")."""
    parts = [str(p) for p in loc]
    where = parts[0] if parts and parts[0] in ("body", "query", "path", "header") else "body"
    rest = parts[1:] if parts and parts[0] == where else parts
    return where, ".".join(rest) or where


def validation_problem(errors: list[dict[str, Any]], instance: str | None = None) -> JSONResponse:
    """422 naming every invalid field; the ``detail`` names the first."""
    items = []
    for err in errors:
        where, field = _field(err.get("loc", ()))
        if err.get("type") == "json_invalid":
            field, message = "body", "request body is not valid JSON"
        else:
            message = str(err.get("msg", "invalid value"))
        items.append({"field": field, "in": where, "message": message})
    if not items:
        items = [{"field": "body", "in": "body", "message": "invalid request"}]
    first = items[0]
    return problem_response(422, "validation_error", f"{first['field']}: {first['message']}",
                            instance=instance, errors=items)


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> str:
    """Every method some route serves at the request's path, for a 405's ``Allow`` (RFC 9110
    section 15.5.6): Starlette names only the methods of the first route whose path matched,
    and FastAPI makes one route per method. Each method is tried against the app's routes."""
    routes = request.app.router.routes
    base = {"type": "http", "path": request.scope["path"],
            "root_path": request.scope.get("root_path", "")}
    return ", ".join(m for m in METHODS if any(
        r.matches({**base, "method": m})[0] is Match.FULL for r in routes))


def install(app: FastAPI) -> None:
    """Register the handlers that turn every failure into a problem document."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return problem_response(exc.status, exc.code, exc.detail, title=exc.title,
                                instance=redact(request.url.path), headers=exc.headers, **exc.extra)

    @app.exception_handler(TetherError)
    async def _tether(request: Request, exc: TetherError) -> JSONResponse:
        status = STATUS_BY_CODE.get(exc.code, 500)
        if status >= 500:
            log.error("%s %s: %s", request.method, redact(request.url.path), exc)
        extra: dict[str, Any] = {}
        job_id = exc.details.get("job_id") if exc.details else None
        if isinstance(job_id, int) and exc.code != "job_not_found":
            extra["job_id"] = job_id
        if exc.details and isinstance(exc.details.get("argument"), str):
            extra["argument"] = exc.details["argument"]
        title = (type(exc).__doc__ or "").strip().splitlines()[0] if type(exc).__doc__ else None
        return problem_response(status, exc.code, exc.message, title=title,
                                instance=redact(request.url.path), **extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_problem(list(exc.errors()), instance=redact(request.url.path))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            # FastAPI's "error parsing the body" when the JSON nests deeper than Python parses
            return problem_response(422, "invalid_payload", "the request body is nested too "
                                    "deeply", instance=redact(request.url.path))
        if exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
            # FastAPI's "error parsing the body": a body that is not UTF-8 is invalid JSON too
            return validation_problem([{"type": "json_invalid", "loc": ("body",)}],
                                      instance=redact(request.url.path))
        code = HTTP_CODES.get(exc.status_code,
                              "bad_request" if exc.status_code < 500 else "internal_error")
        detail = exc.detail if isinstance(exc.detail, str) else TITLES.get(exc.status_code, "")
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": allowed_methods(request)}
        return problem_response(exc.status_code, code, detail, instance=redact(request.url.path),
                                headers=headers)

    @app.exception_handler(UnicodeError)
    async def _unicode(request: Request, exc: UnicodeError) -> JSONResponse:
        return problem_response(422, "invalid_payload", "text is not valid Unicode (lone "
                                "surrogates cannot be stored)", instance=redact(request.url.path))

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, redact(request.url.path))
        return problem_response(500, "internal_error", "the server failed to handle this request",
                                instance=redact(request.url.path))
