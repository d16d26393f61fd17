"""How records look to a person: tables and summaries built from the facade's records.

Nothing here reads the store; every view takes records (or plain dicts) and returns a rich
renderable. ``--json`` output never passes through this module.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table

from ..records import Attempt, Event, Job, QueueInfo, WorkerInfo
from .output import size, state_text, usd, when


def _cell(value: Any) -> str:
    return "" if value is None else escape(str(value))


def _short(text: str | None, limit: int = 60) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def spend(job: Job) -> str:
    """``$0.0123 / $2.00``: spent (plus reserved, when a call is in flight) against the limit."""
    used, limits = job.budget.used, job.budget.limits
    text = usd(used.spent_usd)
    if used.reserved_usd:
        text += f" (+{usd(used.reserved_usd)} reserved)"
    if limits.max_cost_usd is not None:
        text += f" / {usd(limits.max_cost_usd)}"
    return text


def calls_text(job: Job, reused: int | None = None) -> str:
    used, limits = job.budget.used, job.budget.limits
    text = str(used.calls)
    if used.reserved_calls:
        text += f" (+{used.reserved_calls} in flight)"
    if limits.max_calls is not None:
        text += f" / {limits.max_calls}"
    if reused:
        text += f", {reused} reused"
    return text


def tokens(job: Job) -> str:
    used, limits = job.budget.used, job.budget.limits
    inp = f"{used.input_tokens:,}" + (f" / {limits.max_input_tokens:,}"
                                      if limits.max_input_tokens is not None else "")
    outp = f"{used.output_tokens:,}" + (f" / {limits.max_output_tokens:,}"
                                        if limits.max_output_tokens is not None else "")
    return f"in {inp}, out {outp}"


def job_table(jobs: Iterable[Job]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name, kw in (("ID", {"justify": "right"}), ("TYPE", {}), ("PROJECT", {}), ("QUEUE", {}),
                     ("STATE", {}), ("STAGE", {}), ("ATTEMPTS", {"justify": "right"}),
                     ("SPENT", {"justify": "right"}), ("UPDATED", {}), ("ERROR", {})):
        table.add_column(name, no_wrap=name != "ERROR", **kw)
    for job in jobs:
        table.add_row(str(job.id), _cell(job.type), _cell(job.project), _cell(job.queue),
                      state_text(job.state), _cell(job.stage),
                      f"{job.attempt_count}/{job.max_attempts}", escape(spend(job)),
                      when(job.updated_at), _cell(_short(job.error_code and
                                                        f"{job.error_code}: {job.error_summary}")))
    return table


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    return grid


def job_summary(job: Job, *, checkpoints: list[Any] | None = None,
                calls: Any = None) -> Table:
    """The ``job status`` block: identity, state, stage, checkpoints, spend vs budget, error.
    ``calls`` is an ``extras.CallSummary`` when the facade has a ledger or journal."""
    reused = getattr(calls, "reused", None)
    grid = _grid()
    grid.add_row("job", f"{job.id}  [bold]{escape(job.type)}[/]  {state_text(job.state)}")
    grid.add_row("project", f"{escape(job.project)}   queue {escape(job.queue)}   "
                 f"priority {job.priority}")
    grid.add_row("stage", _cell(job.stage) or "-")
    if checkpoints is not None:
        grid.add_row("checkpoints", checkpoint_summary(checkpoints))
    grid.add_row("attempts", f"{job.attempt_count} of {job.max_attempts}")
    grid.add_row("spent", escape(spend(job)))
    grid.add_row("calls", escape(calls_text(job, reused)))
    grid.add_row("tokens", tokens(job))
    if calls is not None and (calls.billed is not None or calls.journal):
        grid.add_row("ledger", call_details(calls))
    extra = job.budget.limits.to_dict()
    for key in ("max_duration_s", "max_examples"):
        if key in extra:
            label = "max duration" if key == "max_duration_s" else "examples"
            value = (f"{extra[key]}s" if key == "max_duration_s"
                     else f"{job.budget.used.examples} / {extra[key]}")
            grid.add_row(label, value)
    if job.idempotency_key:
        grid.add_row("idempotency", _cell(job.idempotency_key))
    grid.add_row("created", when(job.created_at))
    grid.add_row("updated", when(job.updated_at))
    if job.finished_at:
        grid.add_row("finished", when(job.finished_at))
    if job.lease_owner and not job.terminal:
        grid.add_row("lease", f"{escape(job.lease_owner)} until {when(job.lease_expires_at)}")
    if job.error_code:
        grid.add_row("last error", f"[red]{escape(job.error_code)}[/]: "
                     f"{escape(job.error_summary or '')}")
    if job.state == "succeeded" and job.result is not None:
        grid.add_row("result", escape(_short(json.dumps(job.result, default=str), 200)))
    return grid


def _attr(record: Any, name: str) -> Any:
    if isinstance(record, dict):
        return record.get(name)
    return getattr(record, name, None)


def checkpoint_summary(checkpoints: list[Any]) -> str:
    """``3 stages: chunk (1.2 KB), plan (340 B), generate (88.0 KB)`` in stage order."""
    if not checkpoints:
        return "none yet"
    ordered = sorted(checkpoints, key=lambda c: (_attr(c, "position") or 0))
    parts = [f"{escape(str(_attr(c, 'stage')))} ({size(_attr(c, 'size'))})" for c in ordered]
    label = "stage" if len(parts) == 1 else "stages"
    return f"{len(parts)} {label}: " + ", ".join(parts)


def call_details(summary: Any) -> str:
    """``12 billed calls, $0.0123; journal: 12 done, 1 reserved``."""
    parts = []
    if summary.billed is not None:
        n = summary.billed
        parts.append(f"{n} billed call{'s' if n != 1 else ''}, {usd(summary.cost_usd)}")
    if summary.journal:
        parts.append("journal: " + ", ".join(f"{v} {escape(k)}"
                                             for k, v in sorted(summary.journal.items())))
    return "; ".join(parts)


def attempts_table(attempts: Iterable[Attempt]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold", title_justify="left")
    for name in ("#", "WORKER", "CLAIMED", "FINISHED", "OUTCOME", "ERROR"):
        table.add_column(name, no_wrap=name != "ERROR")
    for a in attempts:
        table.add_row(str(a.attempt), _cell(a.worker_id), when(a.claimed_at), when(a.finished_at),
                      _cell(a.outcome), _cell(_short(a.error_code and
                                                     f"{a.error_code}: {a.error_summary}")))
    return table


def status_view(job: Job, attempts: list[Attempt], **extras: Any) -> RenderableType:
    parts: list[RenderableType] = [job_summary(job, **extras)]
    if attempts:
        parts += ["", "[bold]attempts[/]", attempts_table(attempts)]
    return Group(*parts)


def transition(event: Event) -> str:
    if event.from_state or event.to_state:
        return f"{event.from_state or '-'} → {event.to_state or '-'}"
    return ""


def event_data(event: Event) -> str:
    return json.dumps(event.data, default=str, separators=(",", ":")) if event.data else ""


def events_table(events: Iterable[Event]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name in ("SEQ", "AT", "KIND", "TRANSITION", "ATTEMPT", "DATA"):
        table.add_column(name, no_wrap=name != "DATA", justify="right" if name == "SEQ" else "left")
    for e in events:
        table.add_row(str(e.seq), when(e.at), _cell(e.kind), escape(transition(e)),
                      _cell(e.attempt), escape(event_data(e)))
    return table


def event_line(e: Event) -> str:
    """One event as one line of markup, for ``job events --follow``."""
    parts = [f"{e.seq:>4}", when(e.at), f"[bold]{escape(e.kind)}[/]"]
    if transition(e):
        parts.append(escape(transition(e)))
    if e.attempt is not None:
        parts.append(f"attempt {e.attempt}")
    if e.data:
        parts.append(f"[dim]{escape(event_data(e))}[/]")
    return "  ".join(parts)


ACTIVE = ("leased", "running", "pausing", "cancelling")


def queue_table(queues: Iterable[QueueInfo]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    columns = ("QUEUE", "STATUS", "QUEUED", "RUNNING", "RETRY_WAIT", "PAUSED", "INTERRUPTED",
               "FAILED", "SUCCEEDED", "CANCELLED")
    for name in columns:
        table.add_column(name, no_wrap=True, justify="left" if name in columns[:2] else "right")
    for q in queues:
        c = q.counts
        status = "[yellow]paused[/]" if q.paused else "[green]active[/]"
        table.add_row(escape(q.name), status, str(c.get("queued", 0)),
                      str(sum(c.get(s, 0) for s in ACTIVE)),
                      *(str(c.get(s, 0)) for s in ("retry_wait", "paused", "interrupted",
                                                   "failed", "succeeded", "cancelled")))
    return table


def worker_table(workers: Iterable[WorkerInfo]) -> Table:
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name in ("WORKER", "HOST", "PID", "QUEUES", "CONCURRENCY", "LEASES", "STARTED",
                 "HEARTBEAT", "STOPPED"):
        table.add_column(name, no_wrap=True)
    for w in workers:
        table.add_row(escape(w.id), escape(w.hostname), str(w.pid), escape(",".join(w.queues)),
                      str(w.concurrency), str(w.leases), when(w.started_at),
                      when(w.last_heartbeat_at), when(w.stopped_at))
    return table
