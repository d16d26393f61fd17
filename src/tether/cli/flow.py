"""``tether type ...`` and ``tether limit ...``: pause or resume a job type (workers claim no
job of a paused type; running ones finish), and set, clear and watch concurrency limits
(running / limit per key). docs/flow-control.md states the rules."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from . import system_views
from .options import DatabaseUrl, Json, open_app, show_help_if_bare
from .output import emit_json, out, show

if TYPE_CHECKING:
    from ..fleet import TypeInfo

type_app = typer.Typer(help="See job types; pause or resume one.")
limit_app = typer.Typer(help="Concurrency limits of queues and job types: see, set, clear.")


@type_app.callback(invoke_without_command=True)
def _types(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


@limit_app.callback(invoke_without_command=True)
def _limits(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


class Scope(StrEnum):
    queue = "queue"
    type = "type"


TypeName = Annotated[str, typer.Argument(help="The job type's name.", metavar="TYPE",
                                         show_default=False)]
ScopeArg = Annotated[Scope, typer.Argument(help="What the limit is on: a queue or a job type.",
                                           show_default=False)]
LimitName = Annotated[str, typer.Argument(help="The queue's or job type's name.",
                                          metavar="NAME", show_default=False)]


@type_app.command("list")
def list_types(as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """List job types with their status and job counts per state."""
    types = open_app(database_url).job_types()
    if as_json:
        emit_json(types)
    elif not types:
        out().print("no job types", style="dim")
    else:
        show(system_views.type_table, types)


def _show(info: TypeInfo, as_json: bool) -> None:
    if as_json:
        emit_json(info)
    else:
        status = "[yellow]paused[/]" if info.paused else "[green]active[/]"
        out().print(f"type {escape(info.name)}: {status}")


@type_app.command("pause")
def pause(name: TypeName, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Stop workers from claiming jobs of a type (running ones finish)."""
    _show(open_app(database_url).pause_type(name), as_json)


@type_app.command("resume")
def resume(name: TypeName, as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Let workers claim jobs of a type again."""
    _show(open_app(database_url).resume_type(name), as_json)


@limit_app.command("list")
def list_limits(as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Every limit with the slots held now: RUNNING/LIMIT in all (KEY (all)) and per key."""
    app = open_app(database_url)
    if as_json:
        emit_json({"limits": [x.to_dict() for x in app.flow_limits()],
                   "usage": [u.to_dict() for u in app.flow_usage()]})
        return
    usage = app.flow_usage()
    if not usage:
        out().print("no limits", style="dim")
    else:
        show(system_views.usage_table, usage)


@limit_app.command("set")
def set_limit(scope: ScopeArg, name: LimitName,
              per_key: Annotated[int | None, typer.Option(
                  "--per-key", help="At most this many running jobs per key.")] = None,
              total: Annotated[int | None, typer.Option(
                  "--total", help="At most this many running jobs in all.")] = None,
              key: Annotated[str | None, typer.Option(
                  "--key", help="The payload field that is the key (default: the project).",
              )] = None,
              as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Set (replace) the limit of a queue or job type; every worker's next claim obeys it."""
    limit = open_app(database_url).set_flow_limit(scope.value, name, per_key=per_key,
                                                  total=total, key=key)
    if as_json:
        emit_json(limit)
        return
    parts = [f"{limit.per_key} per {escape(limit.key or 'project')}" if limit.per_key else "",
             f"{limit.total} in all" if limit.total else ""]
    out().print(f"{scope.value} {escape(name)}: at most {', '.join(p for p in parts if p)}")


@limit_app.command("clear")
def clear_limit(scope: ScopeArg, name: LimitName, as_json: Json = False,
                database_url: DatabaseUrl = None) -> None:
    """Remove the limit of a queue or job type."""
    cleared = open_app(database_url).clear_flow_limit(scope.value, name)
    if as_json:
        emit_json({"cleared": cleared})
    else:
        out().print(f"{scope.value} {escape(name)}: "
                    + ("limit cleared" if cleared else "had no limit"))
