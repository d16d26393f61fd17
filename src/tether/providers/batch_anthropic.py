"""Anthropic's Message Batches through the official ``anthropic`` SDK: one
``messages.batches.create`` with each item's key as ``custom_id`` (Anthropic allows letters,
digits, ``_`` and ``-``, at most 64: ``CUSTOM_ID``; a key outside that rule is sent under the
id ``core.batches.item_ids`` maps it to, and its result mapped back). A request is the
``params`` of one Messages call without ``model``. Message Batches carry no metadata and
cannot be searched: a batch whose id was not committed cannot be found again (``reattach`` is
false; ``job/batches.py`` then spends the reservation, unconfirmed, rather than upload twice).
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Mapping

from ..core.batches import POLL_FIRST_S, ItemResult, RemoteStatus
from .adapters import extract, to_json_value
from .batches import item_failure

CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What Message Batches take as a ``custom_id``; other keys go under mapped ids."""


class AnthropicBatches:
    name = "anthropic"
    reattach = False
    first_poll_s = POLL_FIRST_S
    item_id: re.Pattern[str] | None = CUSTOM_ID

    def __init__(self, client: Any) -> None:
        self.client = client

    def submit(self, *, tether_key: str, model: str, requests: Mapping[str, Any]) -> str:
        batch = self.client.messages.batches.create(requests=[
            {"custom_id": key, "params": {**request, "model": model}}
            for key, request in requests.items()])
        return str(batch.id)

    def find(self, tether_key: str, *, since: float | None = None) -> str | None:
        return None

    def poll(self, remote_id: str) -> RemoteStatus:
        batch = self.client.messages.batches.retrieve(remote_id)
        c = batch.request_counts
        failed = int(c.errored) + int(c.canceled) + int(c.expired)
        return RemoteStatus(str(batch.processing_status), batch.processing_status == "ended",
                            done=int(c.succeeded), failed=failed,
                            total=int(c.processing) + int(c.succeeded) + failed)

    def results(self, remote_id: str) -> dict[str, ItemResult]:
        out: dict[str, ItemResult] = {}
        for row in self.client.messages.batches.results(remote_id):
            result = row.result
            if result.type == "succeeded":
                value, usage = extract(result.message)
                out[row.custom_id] = ItemResult(ok=True, value=value, usage=usage)
            elif result.type == "errored":
                error = to_json_value(result.error)
                inner = error.get("error") if isinstance(error, dict) else None
                status = 529 if isinstance(inner, dict) and inner.get("type") == \
                    "overloaded_error" else 500 if isinstance(inner, dict) and inner.get(
                        "type") == "api_error" else 400
                out[row.custom_id] = item_failure(status, error)
            else:  # canceled, expired: never processed, not billed
                out[row.custom_id] = ItemResult(ok=False, error_code=f"batch_{result.type}",
                                                error_summary=f"item {result.type}",
                                                retryable=True)
        return out

    def cancel(self, remote_id: str) -> None:
        self.client.messages.batches.cancel(remote_id)
