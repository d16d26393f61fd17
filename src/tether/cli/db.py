"""``tether db migrate`` and ``tether prune``: the store's schema and its housekeeping."""

from __future__ import annotations

from typing import Annotated

import typer

from .options import DatabaseUrl, Json, open_app, show_help_if_bare
from .options import database_url as resolve_url
from .output import emit_json, out
from .parse import parse_duration

db_app = typer.Typer(help="Manage the database schema.")


@db_app.callback(invoke_without_command=True)
def _group(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


def _migrate(url: str | None) -> tuple[list[int], str]:
    """Apply pending migrations; returns the versions applied now and the URL used.

    The store is opened without its automatic first-use migration so the versions applied by
    this command can be reported."""
    from ..app import Tether

    try:
        app = Tether(url, migrate=False)
        applied = list(app.store.migrate())
    except TypeError:  # a backend that always migrates on open
        app = Tether(url)
        applied = list(app.store.migrate())
    try:
        return applied, app.database_url
    finally:
        app.close()


@db_app.command("migrate")
def migrate(as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """Create or upgrade the schema (worker, submit, run and schedule add also do on first use;
    every other command, serve and mcp need it done)."""
    from ..store.urls import redact

    applied, url = _migrate(resolve_url(database_url))
    if as_json:
        emit_json({"database_url": redact(url), "applied": applied})
    elif applied:
        out().print(f"applied migration{'s' if len(applied) != 1 else ''} "
                    f"{', '.join(map(str, applied))} to {redact(url)}")
    else:
        out().print(f"schema of {redact(url)} is up to date")


def prune(
    older_than: Annotated[str, typer.Option(
        "--older-than", metavar="DURATION",
        help="Age since the job finished: 30d, 12h, 15m, 90s, or combinations like 1d12h.")],
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Delete finished jobs (succeeded, failed, cancelled) with their history.

    Events, attempts, journal, ledger rows and checkpoints of those jobs go with them.

    Example: tether prune --older-than 30d
    """
    seconds = parse_duration(older_than, flag="--older-than")
    count = open_app(database_url).prune(older_than_s=seconds)
    if as_json:
        emit_json({"pruned": count, "older_than_s": seconds})
    else:
        out().print(f"pruned {count} job{'s' if count != 1 else ''} finished more than "
                    f"{older_than} ago")
