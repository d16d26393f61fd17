"""How records look to a person: tables and summaries built from the facade's records.

Nothing here reads the store; every view takes records (or plain dicts) and returns a rich
renderable. ``--json`` output never passes through this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable, Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table

from .output import size, state_text, usd, when, when_short

if TYPE_CHECKING:
    from ..records import (Attempt, Event, FlowUsage, Job, ProviderBatch, QueueInfo, TypeInfo,
                           WorkerInfo)


def _table() -> Table:
    """Columns separated by spaces under an underlined header (grep- and cut-friendly)."""
    return Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")


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
        text += f"; {reused} answered from the journal"
    return text


def tokens(job: Job) -> str:
    used, limits = job.budget.used, job.budget.limits
    inp = f"{used.input_tokens:,}" + (f" / {limits.max_input_tokens:,}"
                                      if limits.max_input_tokens is not None else "")
    outp = f"{used.output_tokens:,}" + (f" / {limits.max_output_tokens:,}"
                                        if limits.max_output_tokens is not None else "")
    return f"in {inp}, out {outp}"


@dataclass(frozen=True)
class Column:
    """A table column: its header, how to render a cell, rich options, and the narrowest
    console that still shows it (narrow terminals drop the least useful columns first)."""

    header: str
    cell: Callable[[Any], str]
    options: dict[str, Any] = field(default_factory=dict)
    min_console: int = 0


def _build(columns: Sequence[Column], records: Iterable[Any], width: int) -> Table:
    shown = [c for c in columns if width >= c.min_console]
    table = _table()
    for c in shown:
        table.add_column(c.header, **{"no_wrap": True, **c.options})
    for record in records:
        table.add_row(*(c.cell(record) for c in shown))
    return table


def _error_code(record: Any) -> str:
    return _cell(record.error_code)


def _error_summary(record: Any) -> str:
    return _cell(_short(record.error_summary, 80))


JOB_COLUMNS = (
    Column("ID", lambda j: str(j.id), {"justify": "right"}),
    Column("TYPE", lambda j: _cell(j.type), {"overflow": "ellipsis", "max_width": 24}),
    Column("PROJECT", lambda j: _cell(j.project), {"overflow": "ellipsis", "max_width": 24}, 100),
    Column("QUEUE", lambda j: _cell(j.queue), {"overflow": "ellipsis", "max_width": 24}, 120),
    Column("STATE", lambda j: state_text(j.state), {"min_width": 11}),
    Column("STAGE", lambda j: _cell(j.stage), {"overflow": "ellipsis", "max_width": 16}, 120),
    Column("ATTEMPTS", lambda j: f"{j.attempt_count}/{j.max_attempts}", {"justify": "right"}),
    Column("SPENT", lambda j: escape(spend(j)), {"justify": "right"}),
    Column("UPDATED", lambda j: when_short(j.updated_at), {}, 100),
    Column("ERROR", _error_code, {"overflow": "ellipsis"}),
)


def job_table(jobs: Iterable[Job], width: int = 160) -> Table:
    """Jobs, one per row; a console narrower than 120 (100) columns drops QUEUE and STAGE
    (PROJECT and UPDATED)."""
    return _build(JOB_COLUMNS, jobs, width)


def _grid() -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    return grid


def waiting_rows(job: Job, waiting: Any) -> list[tuple[str, str]]:
    """What a waiting job waits for (a ``facade.workflows.WaitingFor``), as status rows: a
    signal's name, question, schema and deadline, and how to answer; a timer's wake time; a
    gather's children done."""
    if waiting.kind == "signal":
        rows = [("waits for", f"signal [bold]{escape(str(waiting.signal))}[/]")]
        if waiting.prompt:
            rows.append(("question", escape(waiting.prompt)))
        if waiting.schema is not None:
            rows.append(("schema", escape(_short(json.dumps(waiting.schema, default=str), 200))))
        rows.append(("deadline", when(waiting.wake_at) + " (then signal_timeout)"
                     if waiting.wake_at else "none"))
        rows.append(("answer", escape(f"tether job signal {job.id} {waiting.signal} "
                                      "--value JSON")))
        return rows
    if waiting.kind == "timer":
        return [("waits for", f"timer, wakes at {when(waiting.wake_at)}")]
    if waiting.kind == "provider_batch":
        b = waiting.batch or {}
        return [("waits for", escape(f"provider batch {b.get('provider')} "
                                     f"{b.get('remote_id') or '(not sent yet)'}")),
                ("items", f"{b.get('items_done', 0)} done, {b.get('items_failed', 0)} failed, "
                          f"{b.get('items_total', 0)} in all"),
                ("reserved", f"${b.get('reserved_usd')} at the batch price")]
    return [("waits for", f"children, {waiting.children_done}/{waiting.children} done")]


def job_summary(job: Job, *, checkpoints: list[Any] | None = None,
                calls: Any = None, forked_from: dict[str, Any] | None = None,
                waiting: Any = None, unserved: bool = False) -> Table:
    """The ``job status`` block: identity, state, stage, what a waiting job waits for,
    checkpoints, spend vs budget, error. ``calls`` is an ``extras.CallSummary`` when the
    facade has a ledger or journal; ``forked_from`` the data of the job's ``forked_from``
    event, for a fork; ``waiting`` a ``WaitingFor``; ``unserved``: no live worker serves the
    queued job's type on its queue."""
    reused = getattr(calls, "reused", None)
    grid = _grid()
    version = f" version {escape(job.version)}" if job.version else ""
    grid.add_row("job", f"{job.id}  [bold]{escape(job.type)}[/]{version}  "
                 f"{state_text(job.state)}")
    if waiting is not None:
        for label, text in waiting_rows(job, waiting):
            grid.add_row(label, text)
    if unserved:
        version = f" version {escape(job.version)}" if job.version else ""
        grid.add_row("unserved", f"[yellow]no live worker serves type {escape(job.type)}"
                     f"{version} on queue {escape(job.queue)}[/]: it stays queued until a "
                     "worker whose app registers the type"
                     f"{' at that version' if version else ''} starts")
    grid.add_row("project", f"{escape(job.project)}   queue {escape(job.queue)}   "
                 f"priority {job.priority}")
    grid.add_row("stage", _cell(job.stage) or "-")
    if checkpoints is not None:
        grid.add_row("checkpoints", checkpoint_summary(checkpoints))
    if forked_from:
        grid.add_row("forked from", f"job {forked_from['job_id']} at stage "
                     f"{escape(str(forked_from['from_stage']))} (reused: "
                     f"{escape(', '.join(forked_from.get('stages') or []) or 'no stage')})")
    grid.add_row("attempts", f"{job.attempt_count} of {job.max_attempts}")
    grid.add_row("spent", escape(spend(job)))
    grid.add_row("calls", escape(calls_text(job, reused)))
    grid.add_row("tokens", tokens(job))
    if calls is not None and (calls.billed is not None or calls.journal or calls.reused_from):
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
    if job.state == "paused" and job.error_code == "period_budget_exhausted":
        grid.add_row("resumes", f"{when(job.run_after)}, when the project's budget period ends")
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
    parts = [f"{escape(str(_attr(c, 'stage')))} ({size(_attr(c, 'size'))}"
             + (f", reused from job {_attr(c, 'reused_from')}" if _attr(c, "reused_from") else "")
             + ")" for c in ordered]
    label = "stage" if len(parts) == 1 else "stages"
    return f"{len(parts)} {label}: " + ", ".join(parts)


def call_details(summary: Any) -> str:
    """``12 billed calls, $0.0123; journal: 12 done, 1 reserved``."""
    parts = []
    if summary.billed is not None:
        n = summary.billed
        parts.append(f"{n} billed call{'s' if n != 1 else ''}, {usd(summary.cost_usd)}")
    for job_id, (n, cost) in sorted(getattr(summary, "reused_from", {}).items()):
        parts.append(f"{n} call{'s' if n != 1 else ''} reused from job {job_id} "
                     f"({usd(cost)} paid there, not again)")
    if summary.journal:
        parts.append("journal: " + ", ".join(f"{v} {escape(k)}"
                                             for k, v in sorted(summary.journal.items())))
    return "; ".join(parts)


ATTEMPT_COLUMNS = (
    Column("#", lambda a: str(a.attempt), {"justify": "right"}),
    Column("WORKER", lambda a: _cell(a.worker_id), {"overflow": "ellipsis"}),
    Column("CLAIMED", lambda a: when_short(a.claimed_at)),
    Column("FINISHED", lambda a: when_short(a.finished_at)),
    Column("OUTCOME", lambda a: _cell(a.outcome)),
    Column("ERROR", _error_summary, {"no_wrap": False, "overflow": "fold"}),
)


def attempts_table(attempts: Iterable[Attempt], width: int = 160) -> Table:
    return _build(ATTEMPT_COLUMNS, attempts, width)


BATCH_COLUMNS = (
    Column("KEY", lambda b: _cell(b.key), {"overflow": "ellipsis", "max_width": 24}),
    Column("PROVIDER", lambda b: _cell(b.provider)),
    Column("BATCH ID", lambda b: _cell(b.remote_id) or "(not sent yet)", {"overflow": "fold"}),
    Column("STATUS", lambda b: _cell(b.status)),
    Column("DONE / FAILED / ALL", lambda b: f"{b.items_done} / {b.items_failed} / "
           f"{b.items_total}", {"justify": "right"}),
    Column("RESERVED", lambda b: usd(b.reserved_usd), {"justify": "right"}),
    Column("SETTLED", lambda b: usd(b.settled_usd), {"justify": "right"}),
    Column("AT STANDARD PRICE", lambda b: usd(b.standard_usd), {"justify": "right"}),
)


def batches_table(batches: Iterable[ProviderBatch], width: int = 160) -> Table:
    """A job's provider batches: reserved and settled money at the batch price, beside what
    the settled usage would have cost at the standard price."""
    return _build(BATCH_COLUMNS, batches, width)


def status_view(job: Job, attempts: list[Attempt], *, width: int = 160,
                batches: list[ProviderBatch] | None = None, **extras: Any) -> RenderableType:
    parts: list[RenderableType] = [job_summary(job, **extras)]
    if batches:
        parts += ["", "[bold]provider batches[/]", batches_table(batches, width)]
    if attempts:
        parts += ["", "[bold]attempts[/]", attempts_table(attempts, width)]
    return Group(*parts)


def transition(event: Event) -> str:
    if event.from_state or event.to_state:
        return f"{event.from_state or '-'} → {event.to_state or '-'}"
    return ""


def event_data(event: Event) -> str:
    return json.dumps(event.data, default=str, separators=(",", ":")) if event.data else ""


EVENT_COLUMNS = (
    Column("SEQ", lambda e: str(e.seq), {"justify": "right"}),
    Column("AT", lambda e: when(e.at)),
    Column("KIND", lambda e: _cell(e.kind)),
    Column("TRANSITION", lambda e: escape(transition(e))),
    Column("ATTEMPT", lambda e: _cell(e.attempt), {}, 100),
    Column("DATA", lambda e: escape(event_data(e)), {"no_wrap": False, "overflow": "fold"}),
)


def events_table(events: Iterable[Event], width: int = 160) -> Table:
    return _build(EVENT_COLUMNS, events, width)


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


def _count(*states: str) -> Callable[[QueueInfo], str]:
    return lambda q: str(sum(q.counts.get(s, 0) for s in states))


QUEUE_COLUMNS = (
    Column("QUEUE", lambda q: escape(q.name), {"overflow": "ellipsis"}),
    Column("STATUS", lambda q: "[yellow]paused[/]" if q.paused else "[green]active[/]"),
    Column("QUEUED", _count("queued"), {"justify": "right"}),
    Column("RUNNING", _count(*ACTIVE), {"justify": "right"}),
    Column("RETRY_WAIT", _count("retry_wait"), {"justify": "right"}),
    Column("PAUSED", _count("paused"), {"justify": "right"}),
    Column("INTERRUPTED", _count("interrupted"), {"justify": "right"}),
    Column("FAILED", _count("failed"), {"justify": "right"}),
    Column("SUCCEEDED", _count("succeeded"), {"justify": "right"}, 100),
    Column("CANCELLED", _count("cancelled"), {"justify": "right"}, 100),
)


def queue_table(queues: Iterable[QueueInfo], width: int = 160) -> Table:
    """Queues with job counts per state (RUNNING: leased, running, pausing or cancelling)."""
    return _build(QUEUE_COLUMNS, queues, width)


WORKER_COLUMNS = (
    Column("WORKER", lambda w: escape(w.id)),
    Column("QUEUES", lambda w: escape(",".join(w.queues)), {"overflow": "ellipsis"}),
    Column("TYPES", lambda w: escape("*" if w.types is None else ",".join(w.types)),
           {"overflow": "ellipsis"}),
    Column("CONCURRENCY", lambda w: str(w.concurrency), {"justify": "right"}),
    Column("LEASES", lambda w: str(w.leases), {"justify": "right"}),
    Column("STARTED", lambda w: when_short(w.started_at)),
    Column("HEARTBEAT", lambda w: when_short(w.last_heartbeat_at)),
    Column("STOPPED", lambda w: when_short(w.stopped_at)),
)


def worker_table(workers: Iterable[WorkerInfo], width: int = 160) -> Table:
    return _build(WORKER_COLUMNS, workers, width)


TYPE_COLUMNS = (Column("TYPE", lambda t: escape(t.name), {"overflow": "ellipsis"}),
                *QUEUE_COLUMNS[1:])


def type_table(types: Iterable[TypeInfo], width: int = 160) -> Table:
    """Job types with their status (paused on its own) and job counts per state."""
    return _build(TYPE_COLUMNS, types, width)


USAGE_COLUMNS = (
    Column("SCOPE", lambda u: u.scope),
    Column("NAME", lambda u: escape(u.name), {"overflow": "ellipsis"}),
    Column("KEY", lambda u: "[dim](all)[/]" if u.key is None else escape(u.key)),
    Column("RUNNING/LIMIT", lambda u: f"{u.running}/{'-' if u.limit is None else u.limit}",
           {"justify": "right"}),
)


def usage_table(usage: Iterable[FlowUsage], width: int = 160) -> Table:
    """Concurrency limits: slots held now against the limit, in all and per key."""
    return _build(USAGE_COLUMNS, usage, width)
