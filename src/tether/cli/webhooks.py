"""``tether webhook ...``: subscribe URLs to events, list and delete subscriptions, see
deliveries and their attempts, re-send one (docs/alerts.md, "Webhooks").

``add`` prints the subscription's signing secret once; listings never show it. A URL on a
private, loopback or link-local address is refused unless the app allows it
(``TETHER_WEBHOOK_ALLOW_PRIVATE=1``). ``--json`` gives times in ISO 8601.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated
from collections.abc import Iterable

import typer
from rich.markup import escape
from rich.table import Table

from .options import DatabaseUrl, Json, open_app, show_help_if_bare
from .output import emit_json, out, show, when
from .views import Column, build

if TYPE_CHECKING:
    from ..core.webhooks import Delivery, Subscription

webhook_app = typer.Typer(help="Outbound webhooks: subscriptions, deliveries, re-sends.")


@webhook_app.callback(invoke_without_command=True)
def _group(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


Id = Annotated[str, typer.Argument(metavar="ID", show_default=False,
                                   help="A subscription id (sub_...).")]
DeliveryId = Annotated[str, typer.Argument(metavar="DELIVERY", show_default=False,
                                           help="A delivery id (msg_...).")]

SUBSCRIPTION_COLUMNS = (
    Column("ID", lambda s: escape(s.id)),
    Column("PROJECT", lambda s: escape(s.project or "(every)"), {"overflow": "ellipsis"}),
    Column("URL", lambda s: escape(s.url), {"overflow": "ellipsis"}),
    Column("KINDS", lambda s: escape(", ".join(s.kinds)), {"overflow": "fold"}),
    Column("CREATED", lambda s: when(s.created_at), {}, 120),
)

DELIVERY_COLUMNS = (
    Column("ID", lambda d: escape(d.id)),
    Column("KIND", lambda d: escape(d.kind)),
    Column("STATE", lambda d: ("[red]dead[/]" if d.dead else escape(d.state))),
    Column("JOB", lambda d: str(d.job_id)),
    Column("SENDS", lambda d: str(d.sends), {}, 100),
    Column("SUBSCRIPTION", lambda d: escape(d.subscription_id), {}, 120),
    Column("CREATED", lambda d: when(d.created_at), {}, 140),
)


def subscription_table(subs: Iterable[Subscription], width: int = 160) -> Table:
    return build(SUBSCRIPTION_COLUMNS, subs, width)


def delivery_table(found: Iterable[Delivery], width: int = 160) -> Table:
    return build(DELIVERY_COLUMNS, found, width)


@webhook_app.command("add")
def add(
    url: Annotated[str, typer.Argument(metavar="URL", show_default=False,
                                       help="An http(s) URL that receives the POSTs.")],
    kinds: Annotated[list[str], typer.Option(
        "--kind", metavar="KIND", show_default=False,
        help="An event kind (repeat): job.succeeded, job.failed, job.budget_paused, "
             "job.waiting_signal, budget.threshold_crossed, schedule.missed.")],
    project: Annotated[str | None, typer.Option(
        "--project", help="Only this project's events (default: every project).")] = None,
    description: Annotated[str, typer.Option("--description", help="A note for people.")]
    = "",
    as_json: Json = False, database_url: DatabaseUrl = None,
) -> None:
    """Subscribe URL to event kinds; prints the signing secret (shown only now).

    Example: tether webhook add https://hooks.example.com/tether --kind job.failed --project ml
    """
    sub = open_app(database_url).add_webhook(url, kinds, project=project,
                                             description=description)
    if as_json:
        emit_json(sub.to_dict(secret=True))
        return
    out().print(f"webhook {escape(sub.id)} added: {escape(sub.url)} "
                f"({escape(', '.join(sub.kinds))}) for {escape(sub.project or 'every project')}")
    out().print(f"signing secret (shown once): {escape(sub.secret)}")


@webhook_app.command("list")
def list_webhooks(
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")]
    = None,
    as_json: Json = False, database_url: DatabaseUrl = None,
) -> None:
    """List subscriptions (without their secrets)."""
    found = open_app(database_url).webhooks(project=project)
    if as_json:
        emit_json(found)
    elif not found:
        out().print("no webhooks", style="dim")
    else:
        show(subscription_table, found)


@webhook_app.command("delete")
def delete(sub_id: Id, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Delete a subscription (its deliveries stay visible)."""
    sub = open_app(database_url).delete_webhook(sub_id)
    if as_json:
        emit_json(sub)
    else:
        out().print(f"webhook {escape(sub.id)} deleted")


@webhook_app.command("deliveries")
def deliveries(
    webhook: Annotated[str | None, typer.Option("--webhook", metavar="ID",
                                                help="Only this subscription's.")] = None,
    state: Annotated[str | None, typer.Option(
        "--state", help="queued, running, retry_wait, succeeded, failed (dead), cancelled.")]
    = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 50,
    as_json: Json = False, database_url: DatabaseUrl = None,
) -> None:
    """List deliveries, newest first."""
    found = open_app(database_url).deliveries(webhook=webhook, state=state, limit=limit)
    if as_json:
        emit_json(found)
    elif not found:
        out().print("no deliveries", style="dim")
    else:
        show(delivery_table, found)


def _show_delivery(d: Delivery, as_json: bool) -> None:
    if as_json:
        emit_json(d)
        return
    state = "dead (every attempt failed)" if d.dead else d.state
    out().print(f"delivery {escape(d.id)}: {escape(d.kind)} to {escape(d.url)}, {state}, "
                f"job {d.job_id}, sent {d.sends} time(s)")
    for a in d.attempts:
        result = str(a.status) if a.status is not None else escape(a.error or "no answer")
        out().print(f"  attempt {a.n} at {when(a.at)} (job {a.job_id}): {result} "
                    f"in {a.duration_ms:.0f} ms")


@webhook_app.command("delivery")
def delivery(delivery_id: DeliveryId, as_json: Json = False,
             database_url: DatabaseUrl = None) -> None:
    """Show one delivery with every attempt."""
    _show_delivery(open_app(database_url).delivery(delivery_id), as_json)


@webhook_app.command("resend")
def resend(delivery_id: DeliveryId, as_json: Json = False,
           database_url: DatabaseUrl = None) -> None:
    """Send a delivered or dead delivery again (same webhook-id and body)."""
    _show_delivery(open_app(database_url).resend(delivery_id), as_json)
