"""``Cache-Control: no-store`` on every response that does not set its own caching.

Jobs, budgets and problems change from one request to the next and may be private to a
project: no browser or proxy may keep a copy. Outermost middleware, so responses written by
other middleware (the body limit's 413) carry it too.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = (b"cache-control", b"no-store")


class NoStore:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_no_store(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if not any(name.lower() == b"cache-control" for name, _ in headers):
                    headers.append(HEADER)
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_no_store)
