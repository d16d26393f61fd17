"""OpenAI Responses in the background (``background=True``) as a one-item remote job: the
adapter ``ctx.call(..., background=True)`` uses (``job/batches.py: background``).

``submit`` creates the response with ``background=True`` and tether's key in ``metadata`` and
returns its id, which tether commits before the job parks; ``poll`` retrieves it
(``queued``, ``in_progress``, then ``completed``, ``failed``, ``cancelled`` or
``incomplete``); ``results`` reads the final response's usage. The Responses API lists no
responses, so an id lost to a crash cannot be found (``reattach`` false): that reservation is
spent, unconfirmed, rather than the request made twice. Billed at the standard price.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Mapping

from ..core.batches import ItemResult, RemoteStatus
from .adapters import extract
from .batches import item_failure

ENDED = {"completed", "failed", "cancelled", "incomplete"}


class OpenAIBackground:
    name = "openai:background"
    item_id: re.Pattern[str] | None = None
    reattach = False
    first_poll_s = 5.0

    def __init__(self, client: Any) -> None:
        self.client = client

    def submit(self, *, tether_key: str, model: str, requests: Mapping[str, Any]) -> str:
        ((key, request),) = requests.items()
        response = self.client.responses.create(**{**request, "model": model},
                                                background=True,
                                                metadata={"tether_key": tether_key})
        return f"{key}|{response.id}"

    def find(self, tether_key: str, *, since: float | None = None) -> str | None:
        return None

    def poll(self, remote_id: str) -> RemoteStatus:
        _, rid = remote_id.split("|", 1)
        status = str(self.client.responses.retrieve(rid).status)
        ended = status in ENDED
        return RemoteStatus(status, ended, done=int(status == "completed"),
                            failed=int(ended and status != "completed"), total=1)

    def results(self, remote_id: str) -> dict[str, ItemResult]:
        key, rid = remote_id.split("|", 1)
        response = self.client.responses.retrieve(rid)
        if response.status == "completed":
            value, usage = extract(response)
            return {key: ItemResult(ok=True, value=value, usage=usage)}
        error = getattr(response, "error", None)
        failure = item_failure(500 if response.status == "failed" else 400,
                               {"error": error.model_dump() if error is not None else
                                {"message": f"response {response.status}"}})
        if getattr(response, "usage", None) is not None:  # billed for what it produced
            _, used = extract(response)
            return {key: ItemResult(ok=False, usage=used, error_code=failure.error_code,
                                    error_summary=failure.error_summary, billed=True)}
        return {key: failure}

    def cancel(self, remote_id: str) -> None:
        self.client.responses.cancel(remote_id.split("|", 1)[1])
