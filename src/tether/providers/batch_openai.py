"""OpenAI's Batch API through the official ``openai`` SDK: the requests as a JSONL file
(``files.create(purpose="batch")``, one line per item with its key as ``custom_id``), then
``batches.create`` with tether's batch key in ``metadata``, so that a batch whose id was never
committed is found again by listing the batches made since its reservation (``find``).

A request is the body of one ``/v1/chat/completions`` call without ``model`` (the batch's
model is added); ``endpoint`` chooses another endpoint the Batch API serves.
"""

from __future__ import annotations

import json
import re
from typing import Any
from collections.abc import Mapping

from ..core.batches import POLL_FIRST_S, ItemResult, RemoteStatus
from .adapters import extract
from .batches import item_failure

ENDED = {"completed", "failed", "expired", "cancelled"}
METADATA_KEY = "tether_key"
FIND_SKEW_S = 3600.0
"""How far the provider's clock (a batch's ``created_at``) may be behind the store's."""


class OpenAIBatches:
    name = "openai"
    item_id: re.Pattern[str] | None = None
    reattach = True
    first_poll_s = POLL_FIRST_S

    def __init__(self, client: Any, *, endpoint: str = "/v1/chat/completions",
                 completion_window: str = "24h") -> None:
        self.client = client
        self.endpoint = endpoint
        self.completion_window = completion_window

    def submit(self, *, tether_key: str, model: str, requests: Mapping[str, Any]) -> str:
        lines = "".join(json.dumps({"custom_id": key, "method": "POST", "url": self.endpoint,
                                    "body": {**request, "model": model}}) + "\n"
                        for key, request in requests.items())
        upload = self.client.files.create(file=("tether-batch.jsonl", lines.encode()),
                                          purpose="batch")
        batch = self.client.batches.create(
            input_file_id=upload.id, endpoint=self.endpoint,
            completion_window=self.completion_window, metadata={METADATA_KEY: tether_key})
        return str(batch.id)

    def find(self, tether_key: str, *, since: float | None = None) -> str | None:
        """The batch whose ``metadata`` carries ``tether_key``. OpenAI's list of batches takes
        no filter (only ``after`` and ``limit``) and gives the account's batches newest first,
        so the listing, page by page, stops at the first batch created before ``since`` (the
        reservation: the upload came after it) less ``FIND_SKEW_S`` for the two clocks,
        instead of reading every batch the account ever made."""
        oldest = None if since is None else since - FIND_SKEW_S
        for batch in self.client.batches.list(limit=100):  # pages fetched as iterated
            if (batch.metadata or {}).get(METADATA_KEY) == tether_key:
                return str(batch.id)
            if oldest is not None and float(batch.created_at) < oldest:
                return None
        return None

    def poll(self, remote_id: str) -> RemoteStatus:
        batch = self.client.batches.retrieve(remote_id)
        counts = batch.request_counts
        return RemoteStatus(str(batch.status), batch.status in ENDED,
                            done=int(getattr(counts, "completed", 0) or 0),
                            failed=int(getattr(counts, "failed", 0) or 0),
                            total=int(getattr(counts, "total", 0) or 0))

    def results(self, remote_id: str) -> dict[str, ItemResult]:
        batch = self.client.batches.retrieve(remote_id)
        out: dict[str, ItemResult] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            for line in self.client.files.content(file_id).text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    out[str(row["custom_id"])] = _item(row)
        return out

    def cancel(self, remote_id: str) -> None:
        self.client.batches.cancel(remote_id)


def _item(row: dict[str, Any]) -> ItemResult:
    response = row.get("response") or {}
    status = response.get("status_code")
    body = response.get("body")
    if status == 200 and isinstance(body, dict):
        value, usage = extract(body)
        return ItemResult(ok=True, value=value, usage=usage)
    if body is None and row.get("error"):
        body = {"error": row["error"]}
    return item_failure(status, body)
