"""Bearer tokens for MCP over streamable HTTP.

``BearerGate`` refuses any HTTP request without a live token (401 problem+json, like the REST
API) and records the resolved token in the ASGI scope; ``principal_from_request`` reads it back
inside a tool call, so each call is scoped by the token of the request that carried it.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..app import Tether
from ..wire.principal import Principal, resolve
from ..wire.problems import MEDIA_TYPE, Problem, problem_body

SCOPE_KEY = "tether.principal"


class BearerGate:
    def __init__(self, inner: ASGIApp, app: Tether) -> None:
        self.inner = inner
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        header = None
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                header = value.decode("latin-1")
        try:
            info = await run_in_threadpool(resolve, self.app.store, header)
        except Problem as exc:
            body = problem_body(exc.status, exc.code, exc.detail, instance=scope.get("path"))
            response = JSONResponse(body, status_code=exc.status, media_type=MEDIA_TYPE,
                                    headers=exc.headers)
            await response(scope, receive, send)
            return
        scope[SCOPE_KEY] = Principal(info)
        await self.inner(scope, receive, send)


def principal_from_request(ctx: Any) -> Principal:
    """The caller of the tool call in ``ctx`` (an MCP ``Context``) over HTTP."""
    request = ctx.request_context.request
    who = request.scope.get(SCOPE_KEY) if request is not None else None
    if not isinstance(who, Principal):
        raise Problem(401, "unauthorized", "this MCP request carried no bearer token")
    return who
