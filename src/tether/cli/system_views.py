"""The CLI's tables of the running system: queues, workers and shared rate-limit scopes."""

from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Callable, Iterable

from rich.markup import escape
from rich.table import Table

from .output import when_short
from .views import Column, build

if TYPE_CHECKING:
    from ..core.headroom import RateScope
    from ..fleet import FlowUsage, QueueInfo, TypeInfo, WorkerInfo


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
    return build(QUEUE_COLUMNS, queues, width)


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
    return build(WORKER_COLUMNS, workers, width)


def _told(scope: RateScope, key: str) -> str:
    told = scope.to_dict()["provider"]
    value = None if told is None else told[key]
    if key == "retry_in_s":
        return f"{value:.1f}s" if value else "-"
    return "-" if value is None else str(value)


RATE_COLUMNS = (
    Column("SCOPE", lambda s: escape(s.scope)),
    Column("CALLS/MIN", lambda s: str(s.calls), {"justify": "right"}),
    Column("TOKENS/MIN", lambda s: str(s.tokens), {"justify": "right"}),
    Column("REQUESTS LEFT", lambda s: _told(s, "requests_left"), {"justify": "right"}),
    Column("TOKENS LEFT", lambda s: _told(s, "tokens_left"), {"justify": "right"}),
    Column("RETRY IN", lambda s: _told(s, "retry_in_s"), {"justify": "right"}),
)


def rate_scope_table(scopes: Iterable[RateScope], width: int = 160) -> Table:
    """``tether rate-limits``: what the provider last said is left, less what was granted
    since ("-": not told, or refilled since)."""
    return build(RATE_COLUMNS, scopes, width)


TYPE_COLUMNS = (Column("TYPE", lambda t: escape(t.name), {"overflow": "ellipsis"}),
                *QUEUE_COLUMNS[1:])


def type_table(types: Iterable[TypeInfo], width: int = 160) -> Table:
    """Job types with their status (paused on its own) and job counts per state."""
    return build(TYPE_COLUMNS, types, width)


USAGE_COLUMNS = (
    Column("SCOPE", lambda u: u.scope),
    Column("NAME", lambda u: escape(u.name), {"overflow": "ellipsis"}),
    Column("KEY", lambda u: "[dim](all)[/]" if u.key is None else escape(u.key)),
    Column("RUNNING/LIMIT", lambda u: f"{u.running}/{'-' if u.limit is None else u.limit}",
           {"justify": "right"}),
)


def usage_table(usage: Iterable[FlowUsage], width: int = 160) -> Table:
    """Concurrency limits: slots held now against the limit, in all and per key."""
    return build(USAGE_COLUMNS, usage, width)
