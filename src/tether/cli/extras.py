"""What ``job status`` and ``run`` add from the stages/journal/ledger part of the facade.

Each feature is read only when the facade offers it (``app.checkpoints``, ``app.ledger``,
``app.journal``, ``app.call_counts``), so the CLI works with any facade that has the core
methods and shows more as more lands.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from collections.abc import Iterable

if TYPE_CHECKING:
    from ..app import Tether
    from ..records import Job


def _method(app: Tether, name: str) -> Any:
    method = getattr(app, name, None)
    return method if callable(method) else None


def as_dict(record: Any) -> Any:
    if hasattr(record, "to_dict"):
        return record.to_dict()
    if isinstance(record, dict):
        return record
    return {k: v for k, v in vars(record).items() if not k.startswith("_")}


@dataclass
class CallSummary:
    """Calls as the ledger and the journal record them.

    ``billed``: ledger rows (settled calls, unconfirmed ones included); ``cost_usd``: their sum;
    ``journal``: journal keys per status (done, reserved, failed, unconfirmed); ``reused``:
    calls answered from the journal instead of the provider, when the facade counts them."""

    billed: int | None = None
    cost_usd: Decimal | None = None
    journal: dict[str, int] = field(default_factory=dict)
    reused: int | None = None
    reused_from: dict[int, tuple[int, Decimal]] = field(default_factory=dict)
    """Calls a fork carried over, per job that paid for them: (calls, what they cost there)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.billed is not None:
            out["billed"] = self.billed
            out["cost_usd"] = str(self.cost_usd)
        if self.journal:
            out["journal"] = dict(self.journal)
        if self.reused is not None:
            out["reused"] = self.reused
        if self.reused_from:
            out["reused_from"] = [{"job_id": job, "calls": n, "cost_usd": str(cost)}
                                  for job, (n, cost) in sorted(self.reused_from.items())]
        return out


def checkpoints(app: Tether, job_id: int) -> list[Any] | None:
    """The job's finished stages (``stage``, ``position``, ``size``, ``created_at``), or
    ``None`` when the facade has no checkpoints."""
    method = _method(app, "checkpoints")
    return list(method(job_id)) if method else None


def _stats_reused(events: Iterable[Any]) -> int | None:
    found = [(e.data.get("stats") or {}) for e in events
             if isinstance(getattr(e, "data", None), dict) and "stats" in e.data]
    return sum(int(stats.get("calls_reused", 0)) for stats in found) if found else None


def reused_calls(app: Tether, job_id: int) -> int | None:
    """Calls answered from the journal instead of the provider: ``app.call_counts(job_id)``
    when the facade has it, else the ``stats`` that each finished attempt records on its
    outcome event (an attempt killed mid-way records none). ``None`` when unknown."""
    method = _method(app, "call_counts")
    if method is not None:
        counts = method(job_id)
        value = (counts.get("reused") if isinstance(counts, dict)
                 else getattr(counts, "reused", None))
        return int(value) if value is not None else None
    events, after = [], 0
    while True:
        page = app.events(job_id, after=after, limit=1000)
        events += page
        if len(page) < 1000:
            return _stats_reused(events)
        after = page[-1].seq


class ReuseTally:
    """``reused_calls`` for a job being watched: reads only the events it has not seen."""

    def __init__(self, app: Tether, job_id: int) -> None:
        self.app, self.job_id = app, job_id
        self.after = 0
        self.total: int | None = None
        self.direct = _method(app, "call_counts") is not None

    def update(self) -> int | None:
        if self.direct:
            return reused_calls(self.app, self.job_id)
        page = self.app.events(self.job_id, after=self.after, limit=1000)
        if page:
            self.after = page[-1].seq
            found = _stats_reused(page)
            if found is not None:
                self.total = (self.total or 0) + found
        return self.total


def call_summary(app: Tether, job_id: int) -> CallSummary | None:
    ledger, journal = _method(app, "ledger"), _method(app, "journal")
    summary = CallSummary(reused=reused_calls(app, job_id))
    if ledger is not None:
        rows = ledger(job_id)
        paid = [r for r in rows if getattr(r, "reused_from", None) is None]
        summary.billed = len(paid)
        summary.cost_usd = sum((Decimal(str(getattr(r, "cost_usd", 0) or 0)) for r in paid),
                               start=Decimal(0))
        for r in rows:
            if getattr(r, "reused_from", None) is not None:
                n, cost = summary.reused_from.get(r.reused_from, (0, Decimal(0)))
                summary.reused_from[r.reused_from] = (n + 1, cost + (r.reused_cost_usd or 0))
    if journal is not None:
        summary.journal = dict(Counter(str(getattr(e, "status", "?")) for e in journal(job_id)))
    if summary.billed is None and not summary.journal and summary.reused is None:
        return None
    return summary


def status_extras(app: Tether, job: Job) -> dict[str, Any]:
    """Keyword arguments for ``views.status_view``: only what the facade can tell."""
    job_id = job.id
    out: dict[str, Any] = {"unserved": job_id in app.unserved([job])}
    found = checkpoints(app, job_id)
    if found is not None:
        out["checkpoints"] = found
    summary = call_summary(app, job_id)
    if summary is not None:
        out["calls"] = summary
    forked = forked_from(app, job_id)
    if forked is not None:
        out["forked_from"] = forked
    waiting = app.waiting_summary(job_id)
    if waiting is not None:
        out["waiting"] = waiting
    out["batches"] = app.batches(job_id)
    if job.budget.limits.thresholds:
        out["crossings"] = app.budget_crossings(job.project, job_id=job_id)
    return out


def forked_from(app: Tether, job_id: int) -> dict[str, Any] | None:
    """The ``forked_from`` event's data of a fork (source job, from_stage, stages reused), or
    None. A fork writes it in the transaction that creates it, right after ``submitted``."""
    found = app.events(job_id, after=1, limit=1)
    return dict(found[0].data) if found and found[0].kind == "forked_from" else None


def status_json(app: Tether, job_id: int) -> dict[str, Any]:
    """The ``job status --json`` object: the job's ``to_dict()`` plus ``attempts``,
    ``waiting_for`` (a waiting job's open wait, else null), ``unserved`` (queued, and no live
    worker serves its type on its queue), ``batches`` (the job's provider batches),
    ``crossings`` (the thresholds its own budget crossed, newest first) and, when
    the facade has them,
    ``checkpoints`` (records) and ``calls`` (a ``CallSummary``)."""
    job = app.get(job_id)
    data = job.to_dict()
    data["attempts"] = [a.to_dict() for a in app.attempts(job_id)]
    extras = status_extras(app, job)
    data["unserved"] = extras["unserved"]
    if "checkpoints" in extras:
        data["checkpoints"] = [as_dict(c) for c in extras["checkpoints"]]
    if "calls" in extras:
        data["calls"] = extras["calls"].to_dict()
    if "forked_from" in extras:
        data["forked_from"] = extras["forked_from"]
    data["waiting_for"] = extras["waiting"].to_dict() if "waiting" in extras else None
    data["batches"] = [b.to_dict() for b in extras["batches"]]
    data["crossings"] = [c.to_dict() for c in extras.get("crossings", [])]
    return data
