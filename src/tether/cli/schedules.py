"""``tether schedule ...``: list, add, pause, resume and delete durable schedules.

Every worker runs the scheduler, so a schedule added here fires once per tick however many
workers there are. ``add`` with the name of an existing schedule redefines it (its next run
stays unless the cron or zone changes). Times are shown in UTC; ``--json`` gives ISO 8601.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated
from collections.abc import Iterable

import typer
from rich.markup import escape
from rich.table import Table

from .options import (
    AppSpec, DatabaseUrl, Json, MaxCalls, MaxCost, MaxDuration, MaxInputTokens, MaxOutputTokens,
    Payload, PayloadFile, Queue, open_app, show_help_if_bare,
)
from .output import emit_json, note, out, show, when
from .parse import budget_limits, read_payload
from .views import Column, build

if TYPE_CHECKING:
    from ..records import Schedule

schedule_app = typer.Typer(help="Durable schedules: each cron tick enqueues exactly one job.")


@schedule_app.callback(invoke_without_command=True)
def _group(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


Name = Annotated[str, typer.Argument(help="The schedule's name.", metavar="NAME",
                                     show_default=False)]

COLUMNS = (
    Column("NAME", lambda s: escape(s.name), {"overflow": "ellipsis"}),
    Column("CRON", lambda s: escape(s.cron)),
    Column("TZ", lambda s: escape(s.timezone)),
    Column("TYPE", lambda s: escape(s.type), {"overflow": "ellipsis"}),
    Column("NEXT RUN (UTC)", lambda s: when(s.next_run_at) if s.next_run_at else "-"),
    Column("STATUS", lambda s: "[yellow]paused[/]" if s.paused else "[green]active[/]"),
    Column("CATCH_UP", lambda s: s.catch_up, {}, 100),
    Column("PROJECT", lambda s: escape(s.project), {"overflow": "ellipsis"}, 120),
    Column("LAST RUN", lambda s: when(s.last_run_at) if s.last_run_at else "-", {}, 140),
)


def schedule_table(schedules: Iterable[Schedule], width: int = 160) -> Table:
    return build(COLUMNS, schedules, width)


def _show(s: Schedule, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(s)
        return
    status = "paused" if s.paused else f"next run {when(s.next_run_at)}"
    out().print(f"schedule {escape(s.name)} {verb}: {escape(s.cron)} ({escape(s.timezone)}), "
                f"{escape(s.type)} in {escape(s.project)}/{escape(s.queue)}, {status}")


@schedule_app.command("list")
def list_schedules(
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")]
    = None,
    as_json: Json = False, database_url: DatabaseUrl = None,
) -> None:
    """List schedules with their next run time (UTC)."""
    found = open_app(database_url).schedules(project=project)
    if as_json:
        emit_json(found)
    elif not found:
        out().print("no schedules", style="dim")
    else:
        show(schedule_table, found)


@schedule_app.command("add")
def add(
    name: Name,
    cron: Annotated[str, typer.Option("--cron", metavar="EXPR", show_default=False,
                                      help="Five fields (minute hour day month weekday) or "
                                           "@hourly, @daily, ...")],
    type_: Annotated[str, typer.Option("--type", metavar="TYPE", show_default=False,
                                       help="The job type each tick enqueues.")],
    timezone: Annotated[str, typer.Option(
        "--timezone", "--tz", metavar="ZONE",
        help="IANA time zone the cron's wall-clock times are in.")] = "UTC",
    catch_up: Annotated[str, typer.Option(
        "--catch-up", metavar="MODE",
        help="Ticks missed while no worker ran: latest (enqueue the most recent), all, none."
    )] = "latest",
    payload: Payload = None,
    payload_file: PayloadFile = None,
    project: Annotated[str, typer.Option("--project", help="The project of the jobs.")]
    = "default",
    queue: Queue = None,
    max_cost: MaxCost = None,
    max_calls: MaxCalls = None,
    max_input_tokens: MaxInputTokens = None,
    max_output_tokens: MaxOutputTokens = None,
    max_duration: MaxDuration = None,
    as_json: Json = False,
    app_spec: AppSpec = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Add (or redefine) a schedule. Without --app its job type is not checked (a warning
    says so).

    Example: tether schedule add nightly-eval --cron '0 3 * * *' --tz Europe/Berlin --type eval
    """
    budget = budget_limits(max_cost=max_cost, max_calls=max_calls,
                           max_input_tokens=max_input_tokens,
                           max_output_tokens=max_output_tokens, max_duration=max_duration)
    app = open_app(database_url, app_spec, create=True)
    s = app.schedule(name, cron=cron, timezone=timezone, type=type_,
                     payload=read_payload(payload, payload_file), budget=budget or None,
                     project=project, queue=queue, catch_up=catch_up)
    if app_spec is None:
        note(f"warning: job type {type_!r} was not checked: pass --app MODULE:APP (or set "
             "TETHER_APP) to check it against your job types")
    _show(s, as_json, "saved")


@schedule_app.command("pause")
def pause(name: Name, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Pause a schedule: no tick is enqueued until it is resumed."""
    _show(open_app(database_url).pause_schedule(name), as_json, "paused")


@schedule_app.command("resume")
def resume(name: Name, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Resume a schedule from its first tick after now (ticks of the pause are skipped)."""
    _show(open_app(database_url).resume_schedule(name), as_json, "resumed")


@schedule_app.command("delete")
def delete(name: Name, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Delete a schedule (the jobs it enqueued stay)."""
    _show(open_app(database_url).delete_schedule(name), as_json, "deleted")
