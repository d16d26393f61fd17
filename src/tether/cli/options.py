"""Options shared by every command, and how a command gets its ``Tether`` app.

The database URL is resolved as: the command's ``--database-url``, else the root
``tether --database-url`` (which also reads ``TETHER_DATABASE_URL``), else the app's own
default (``TETHER_DATABASE_URL`` or ``sqlite:///./tether.db``). ``--app MODULE:APP`` (or
``TETHER_APP``) loads the user's job types where they matter: worker, submit, run, serve, mcp.
Modules written outside this package (``tether token``, ``prices``, ``demo``) may call
``open_app`` the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .output import CliError
from .parse import parse_usd

if TYPE_CHECKING:
    from ..app import Tether

DB_HELP = ("Database URL: sqlite:///path/to.db or postgresql://... "
           "[default: the root option, TETHER_DATABASE_URL, or sqlite:///./tether.db]")

DatabaseUrl = Annotated[str | None, typer.Option(
    "--database-url", help=DB_HELP, metavar="URL", show_default=False)]
AppSpec = Annotated[str | None, typer.Option(
    "--app", envvar="TETHER_APP", metavar="MODULE:APP",
    help="Where your job types live: module:attr (or path/file.py:attr) of a tether.Tether.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of a table.")]
JobId = Annotated[int, typer.Argument(help="The job id.", metavar="JOB_ID", show_default=False)]

# Submission options shared by ``submit`` and ``run``.
Payload = Annotated[str | None, typer.Option(
    "--payload", "-p", metavar="JSON", help="The job's payload as JSON.")]
PayloadFile = Annotated[Path | None, typer.Option(
    "--payload-file", "-f", metavar="FILE", help="Read the JSON payload from FILE ('-': stdin).")]
Project = Annotated[str, typer.Option("--project", help="The project the job belongs to.")]
IdempotencyKey = Annotated[str | None, typer.Option(
    "--idempotency-key", "-k", metavar="KEY",
    help="Submitting the same key and configuration again returns the existing job.")]
Queue = Annotated[str | None, typer.Option(
    "--queue", help="Queue name [default: the job type's queue, else 'default'].")]
Priority = Annotated[int | None, typer.Option(
    "--priority", help="Lower runs first [default: the job type's priority, else 0].")]
RunAfter = Annotated[str | None, typer.Option(
    "--run-after", metavar="WHEN",
    help="Not before WHEN: ISO 8601 (UTC unless an offset is given), a delay such as 10m, "
         "or unix seconds.")]
MaxAttempts = Annotated[int | None, typer.Option(
    "--max-attempts", min=1,
    help="Attempts before the job fails [default: the job type's, else 3].")]

# Budget limits shared by ``submit``, ``run`` and ``job budget``.
MaxCost = Annotated[Decimal | None, typer.Option(
    "--max-cost", metavar="USD", parser=parse_usd,
    help="Most the job may spend, in USD (e.g. 2.50).")]
MaxCalls = Annotated[int | None, typer.Option(
    "--max-calls", min=0, help="Most provider calls the job may make.")]
MaxInputTokens = Annotated[int | None, typer.Option(
    "--max-input-tokens", min=0, help="Most input tokens across the job's calls.")]
MaxOutputTokens = Annotated[int | None, typer.Option(
    "--max-output-tokens", min=0, help="Most output tokens across the job's calls.")]
MaxDuration = Annotated[str | None, typer.Option(
    "--max-duration", metavar="DURATION", help="Longest the job may run (e.g. 2h, 45m).")]
MaxExamples = Annotated[int | None, typer.Option(
    "--max-examples", min=0, help="Most examples the job may produce.")]
Thresholds = Annotated[str | None, typer.Option(
    "--thresholds", metavar="FRACTIONS", show_default=False,
    help="Alert once when settled use reaches each fraction of every cost, calls and tokens "
         "limit (e.g. 0.5,0.8,1); 'none' clears them.")]
Soft = Annotated[bool | None, typer.Option(
    "--soft/--hard", show_default=False,
    help="A soft budget only alerts (its thresholds fire); a hard one stops calls at its "
         "limits.")]


@dataclass
class RootOptions:
    """What the root command parsed (``tether --database-url URL ...``)."""

    database_url: str | None = None


ROOT = RootOptions()
_opened: list[Tether] = []


def set_root(options: RootOptions) -> None:
    global ROOT
    ROOT = options


def database_url(explicit: str | None) -> str | None:
    """The command's ``--database-url``, else the root one (or ``TETHER_DATABASE_URL``)."""
    return explicit or ROOT.database_url


def open_app(explicit_url: str | None = None, app_spec: str | None = None, *,
             require_app: bool = False, purpose: str = "this command",
             create: bool = False) -> Tether:
    """The ``Tether`` a command talks to: the user's app (``--app``) pointed at the resolved
    database, or a bare app when job types do not matter. ``close_all`` closes it.

    Only commands that put work in or do it (``create``: worker, submit, run, schedule add)
    may create and migrate the database on first use; every other command opens an existing
    tether database only, so a mistyped URL is ``no_database``, never a new empty one.

    The facade and the user's module are imported here, not with the CLI: a command that opens
    no store (``--help``, ``--version``) never pays for the store and its backends."""
    from ..loader import app_at

    if app_spec is None and require_app:
        raise CliError(f"{purpose} needs your job types: pass --app MODULE:APP "
                       "(or set TETHER_APP)", code="missing_app")
    app = app_at(app_spec, database_url(explicit_url), create_database=create)
    _opened.append(app)
    return app


def close_all() -> None:
    """Close every app ``open_app`` handed out (``main`` calls this when a command ends)."""
    while _opened:
        _opened.pop().close()


def show_help_if_bare(ctx: typer.Context) -> None:
    """For a command group's callback: with no sub-command, print the group's help, exit 2."""
    if ctx.invoked_subcommand is None:
        text = ctx.get_help()
        if text:
            typer.echo(text)
        raise typer.Exit(2)
