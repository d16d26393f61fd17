"""Request body size limit: a body larger than the limit is refused with 413 before it is parsed.

A declared ``Content-Length`` over the limit is refused at once; a chunked body is counted as it
streams and refused as soon as it crosses the limit.
"""

from __future__ import annotations

import json

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..wire.problems import MEDIA_TYPE, TYPE_PREFIX

DEFAULT_MAX_BODY_BYTES = 1024 * 1024


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a streamed body crosses the limit. FastAPI lets an
    ``HTTPException`` from body reading through, so the problem handler answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes")


def _problem(limit: int, path: str) -> bytes:
    return json.dumps({
        "type": TYPE_PREFIX + "payload_too_large", "title": "Payload too large", "status": 413,
        "detail": f"the request body is larger than {limit} bytes", "code": "payload_too_large",
        "instance": path, "limit": limit,
    }).encode()


class BodyLimit:
    """ASGI middleware enforcing ``max_body_bytes`` on every HTTP request."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = max_body_bytes

    async def _refuse(self, scope: Scope, send: Send) -> None:
        body = _problem(self.limit, scope.get("path", ""))
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", MEDIA_TYPE.encode()),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    await self._refuse(scope, send)
                    return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(scope, send)
