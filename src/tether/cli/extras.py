"""Facade features that arrive with the stages/checkpoints/ledger work, read when present.

``job status`` and ``run`` show checkpoints, the cost ledger and reused-call counts only when
the facade offers them (``app.checkpoints(job_id)``, ``app.ledger(job_id)``,
``app.call_counts(job_id)``), so they light up when those land without a CLI change.
"""

from __future__ import annotations

from typing import Any

from ..app import Tether


def _records(app: Tether, name: str, job_id: int) -> list[Any] | None:
    method = getattr(app, name, None)
    if not callable(method):
        return None
    return list(method(job_id))


def checkpoints(app: Tether, job_id: int) -> list[Any] | None:
    """The job's finished stages (records with ``stage``, ``position``, ``size``,
    ``created_at``), or ``None`` when the facade has no checkpoints yet."""
    return _records(app, "checkpoints", job_id)


def ledger(app: Tether, job_id: int) -> list[Any] | None:
    """The job's cost-ledger rows, or ``None`` when the facade has no ledger yet."""
    return _records(app, "ledger", job_id)


def reused_calls(app: Tether, job_id: int) -> int | None:
    """How many calls were answered from the journal instead of the provider, when known."""
    method = getattr(app, "call_counts", None)
    if not callable(method):
        return None
    counts = method(job_id)
    value = counts.get("reused") if isinstance(counts, dict) else getattr(counts, "reused", None)
    return int(value) if value is not None else None


def as_dict(record: Any) -> Any:
    if hasattr(record, "to_dict"):
        return record.to_dict()
    if isinstance(record, dict):
        return record
    return {k: v for k, v in vars(record).items() if not k.startswith("_")}


def status_extras(app: Tether, job_id: int) -> dict[str, Any]:
    """Keyword arguments for ``views.status_view``: only what the facade can tell."""
    out: dict[str, Any] = {}
    for key, value in (("checkpoints", checkpoints(app, job_id)),
                       ("ledger", ledger(app, job_id)),
                       ("reused", reused_calls(app, job_id))):
        if value is not None:
            out[key] = value
    return out


def status_json(app: Tether, job_id: int) -> dict[str, Any]:
    """The ``job status --json`` object: the job's ``to_dict()`` plus ``attempts`` and, when the
    facade has them, ``checkpoints``, ``ledger`` and ``reused_calls``."""
    data = app.get(job_id).to_dict()
    data["attempts"] = [a.to_dict() for a in app.attempts(job_id)]
    extras = status_extras(app, job_id)
    for key in ("checkpoints", "ledger"):
        if key in extras:
            data[key] = [as_dict(r) for r in extras[key]]
    if "reused" in extras:
        data["reused_calls"] = extras["reused"]
    return data
