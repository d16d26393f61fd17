"""A Server-Sent Events reader over an httpx streaming response, for the stream tests."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import httpx


@dataclass
class Message:
    id: str | None = None
    event: str | None = None
    data: Any = None
    comments: list[str] = field(default_factory=list)
    retry: int | None = None


def messages(response: httpx.Response) -> Iterator[Message]:
    """Each block of the stream (events, and blocks holding only comments or ``retry:``)."""
    msg, data = Message(), []
    for line in response.iter_lines():
        if line == "":
            if data:
                msg.data = json.loads("\n".join(data))
            yield msg
            msg, data = Message(), []
            continue
        if line.startswith(":"):
            msg.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "id":
            msg.id = value
        elif name == "event":
            msg.event = value
        elif name == "retry":
            msg.retry = int(value)


class Stream:
    """One open stream: ``next_event`` skips keep-alives; a deadline bounds every read."""

    def __init__(self, client: httpx.Client, path: str, **kw: Any) -> None:
        self._cm = client.stream("GET", path, **kw)
        self.response = self._cm.__enter__()
        self._it = messages(self.response) if self.response.status_code == 200 else iter(())
        self.keepalives = 0

    def first(self) -> Message:
        """The first block (``retry:``): the server has subscribed once it arrives."""
        return next(self._it)

    def next_event(self, timeout: float = 60.0) -> Message | None:
        """The next event, or None when the server ended the stream."""
        deadline = time.monotonic() + timeout
        for msg in self._it:
            if msg.event is not None:
                return msg
            if "keep-alive" in msg.comments:
                self.keepalives += 1
            if time.monotonic() > deadline:
                raise AssertionError(f"no event within {timeout}s")
        return None

    def close(self) -> None:
        self._cm.__exit__(None, None, None)

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
