"""``tether queue ...``: see queue depths and pause or resume a queue (workers skip a paused
queue; jobs already running finish)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from . import system_views
from .options import DatabaseUrl, Json, open_app, show_help_if_bare
from .output import emit_json, out, show

if TYPE_CHECKING:
    from ..fleet import QueueInfo

queue_app = typer.Typer(help="See queues; pause or resume one.")


@queue_app.callback(invoke_without_command=True)
def _group(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)

QueueName = Annotated[str, typer.Argument(help="The queue's name.", metavar="QUEUE",
                                          show_default=False)]


@queue_app.command("list")
def list_queues(as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """List queues with their job counts per state."""
    queues = open_app(database_url).queues()
    if as_json:
        emit_json(queues)
    elif not queues:
        out().print("no queues", style="dim")
    else:
        show(system_views.queue_table, queues)


def _show(info: QueueInfo, as_json: bool) -> None:
    if as_json:
        emit_json(info)
    else:
        status = "[yellow]paused[/]" if info.paused else "[green]active[/]"
        out().print(f"queue {escape(info.name)}: {status}")


@queue_app.command("pause")
def pause(name: QueueName, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Stop workers from claiming jobs on a queue."""
    _show(open_app(database_url).pause_queue(name), as_json)


@queue_app.command("resume")
def resume(name: QueueName, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Let workers claim jobs on a queue again."""
    _show(open_app(database_url).resume_queue(name), as_json)
