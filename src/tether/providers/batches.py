"""Provider batch adapters: one per provider batch API, all with the same five methods.

``ctx.batch`` and the workers' batch poller speak to a provider only through a
``BatchAdapter``; OpenAI's (``batch_openai.py``) and Anthropic's (``batch_anthropic.py``) wrap
the official SDKs, and the simulated provider's (here) keeps its batches in a directory. A
third provider is one more adapter, registered with ``app.add_batch_provider``.

An item that failed at the provider is classified as a call's failure would be
(``classify.py``): ``item_failure`` builds the ``ItemResult`` from the status and body the
provider reported for it.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Protocol
from collections.abc import Callable, Mapping

from ..core.batches import ItemResult, RemoteStatus
from ..core.retry import error_code_of, summarize
from ..core.usage import Usage
from .classify import classify_exception
from .simulated import SimulatedProvider, count_tokens


class BatchAdapter(Protocol):
    name: str
    reattach: bool
    """Whether ``find`` can find an upload whose batch id was never committed."""
    first_poll_s: float
    """How long after the upload the first poll is worth making."""
    item_id: re.Pattern[str] | None
    """The provider's rule for an item's id (None: any key); keys it refuses are sent under
    ids ``core.batches.item_ids`` maps them to, and their results mapped back."""

    def submit(self, *, tether_key: str, model: str, requests: Mapping[str, Any]) -> str:
        """Upload ``requests`` (item key -> request body) as one batch; its provider id."""
        ...

    def find(self, tether_key: str, *, since: float | None = None) -> str | None:
        """The id of a batch uploaded earlier with ``tether_key``, if the provider has one;
        ``since``: when the batch was reserved (unix seconds; the upload came later), so a
        provider that can only list batches stops listing there."""
        ...

    def poll(self, remote_id: str) -> RemoteStatus: ...

    def results(self, remote_id: str) -> dict[str, ItemResult]:
        """Every item the provider has an outcome for, by item key (an ended batch)."""
        ...

    def cancel(self, remote_id: str) -> None: ...


class _ItemError(Exception):
    """What one item's failure looks like to ``classify_exception`` (an SDK error's shape)."""

    def __init__(self, status: int | None, body: Any) -> None:
        super().__init__(json.dumps(body)[:500] if body is not None else f"status {status}")
        self.status_code = status
        self.body = body
        self.response = None


def item_failure(status: int | None, body: Any) -> ItemResult:
    """A failed item, classified like a call that got ``status`` and ``body``."""
    exc = _ItemError(status, body)
    mapped = classify_exception(exc)
    code = getattr(mapped, "code", None) or error_code_of(mapped)
    retryable = bool(getattr(mapped, "retryable", False)) or code == "transient"
    return ItemResult(ok=False, error_code=code, error_summary=summarize(exc),
                      retryable=retryable, billed=bool(getattr(mapped, "billed", False)))


class SimulatedBatches:
    """The simulated provider's batch mode: a batch is a JSON file in ``directory``; it ends
    ``complete_after_s`` after its upload (by ``now``), or when ``finish(id)`` is called.
    Requests are ``{"prompt": ..., "max_tokens": ...}``; answers as ``SimulatedProvider``
    gives them, ``{"text": ..., "model": ...}``. Finds uploads by key (``reattach``).

    Like a real provider it bills a batch once, when it is first seen ended (a poll or its
    results), whatever process sees it and however often its results are fetched: one line
    per answered item on the simulated bill (``bill``, default ``bill.jsonl`` in
    ``directory``) at the profile's batch price, keyed ``<batch key>/<item key>`` as tether's
    ledger keys it. A cancelled batch bills nothing."""

    name = "simulated"
    reattach = True
    item_id: re.Pattern[str] | None = None

    def __init__(self, directory: str | Path, *, seed: int = 0, complete_after_s: float = 0.0,
                 now: Callable[[], float] = time.time, bill: str | Path | None = None) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.sim = SimulatedProvider(bill or self.dir / "bill.jsonl", seed=seed)
        self.complete_after_s = complete_after_s
        self.first_poll_s = complete_after_s
        self.now = now

    def _path(self, remote_id: str) -> Path:
        return self.dir / f"{remote_id}.json"

    def _read(self, remote_id: str) -> dict[str, Any]:
        return json.loads(self._path(remote_id).read_text())

    def submit(self, *, tether_key: str, model: str, requests: Mapping[str, Any]) -> str:
        remote_id = f"simbatch_{os.urandom(6).hex()}"
        body = {"tether_key": tether_key, "model": model, "requests": dict(requests),
                "submitted_at": self.now(), "state": "in_progress"}
        tmp = self.dir / f".{remote_id}.tmp"
        tmp.write_text(json.dumps(body))
        tmp.rename(self._path(remote_id))
        return remote_id

    def find(self, tether_key: str, *, since: float | None = None) -> str | None:
        for path in sorted(self.dir.glob("simbatch_*.json")):
            if json.loads(path.read_text()).get("tether_key") == tether_key:
                return path.stem
        return None

    def _set_state(self, remote_id: str, state: str) -> None:
        body = self._read(remote_id)
        body["state"] = state
        self._path(remote_id).write_text(json.dumps(body))

    def finish(self, remote_id: str) -> None:
        """End the batch now (tests and the demo)."""
        self._set_state(remote_id, "ended")

    def cancel(self, remote_id: str) -> None:
        self._set_state(remote_id, "cancelled")

    def poll(self, remote_id: str) -> RemoteStatus:
        body = self._read(remote_id)
        n = len(body["requests"])
        state = body["state"]
        if state == "in_progress" and self.now() >= body["submitted_at"] + self.complete_after_s:
            state = "ended"
        ended = state != "in_progress"
        if state == "ended":
            self._answers(remote_id, body)
        return RemoteStatus(state, ended, done=n if state == "ended" else 0, total=n)

    def results(self, remote_id: str) -> dict[str, ItemResult]:
        body = self._read(remote_id)
        if body["state"] == "cancelled":
            return {}
        return self._answers(remote_id, body)

    def _answers(self, remote_id: str, body: dict[str, Any]) -> dict[str, ItemResult]:
        """The ended batch's answers (they depend only on the requests), billed by the first
        caller to create ``<id>.billed``."""
        out = {}
        for key, request in body["requests"].items():
            prompt = str(request.get("prompt", ""))
            text, n_out = self.sim.answer(prompt, int(request.get("max_tokens", 256)),
                                          body["model"])
            out[key] = ItemResult(ok=True, value={"text": text, "model": body["model"]},
                                  usage=Usage(input_tokens=count_tokens(prompt),
                                              output_tokens=n_out))
        try:
            os.close(os.open(self.dir / f"{remote_id}.billed",
                             os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return out
        parts = str(body["tether_key"]).split(":")
        job_id = int(parts[1]) if len(parts) >= 4 and parts[1].isdigit() else None
        batch_key = ":".join(parts[2:-1]) if len(parts) >= 4 else str(body["tether_key"])
        for key, item in out.items():
            assert item.usage is not None
            self.sim.bill(f"{batch_key}/{key}", job_id, body["model"], item.usage, "ok",
                          batch=True)
        return out
