"""``tether``: the command-line interface, a thin layer over the ``Tether`` facade.

Exit codes scripts can rely on: 0 ok; 1 ``run``'s job did not succeed (or an operational
failure such as an unreachable store); 2 usage error (bad flags, invalid input, a transition the
job's state does not allow); 3 not found; 130 interrupted. Errors print one line on stderr:
``error: <message> (<code>)``.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated
from collections.abc import Sequence

import click
import typer

from .. import __version__
from ..errors import TetherError
from . import (
    db, flow, jobs, projects, queues, run, schedules, server, spend, submit, webhooks, worker,
)
from .options import RootOptions, close_all, set_root, show_help_if_bare
from .output import (
    EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError, err, exit_code_for, report,
)
from .plugins import register_plugins

# Typer joins an epilog's lines into one Markdown paragraph: a trailing backslash is a hard
# line break, so each example stays on its own line.
EPILOG = """\
Examples:\\

tether worker --app myproject.jobs:app --concurrency 4\\

tether run summarize --app myproject.jobs:app -p '{"url": "https://example.com"}' --max-cost 2\\

tether submit summarize -p '{"url": "https://example.com"}' --idempotency-key doc-42\\

tether job list --project docs --state failed --json\\

tether job events 42 --follow\\

tether spend --by model --since 7d\\

\\

Data goes to stdout, progress and errors to stderr. Exit codes: 0 ok, 1 job did not succeed
(run), 2 usage error or invalid transition, 3 not found.
"""

app = typer.Typer(
    name="tether",
    help="tether: a durable job engine for long, expensive work such as LLM pipelines.",
    epilog=EPILOG,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"tether {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    database_url: Annotated[str | None, typer.Option(
        "--database-url", envvar="TETHER_DATABASE_URL", metavar="URL",
        help="Database for every command: sqlite:///path/to.db or postgresql://... "
             "[default: sqlite:///./tether.db]")] = None,
    log_level: Annotated[str, typer.Option(
        "--log-level", envvar="TETHER_LOG_LEVEL", metavar="LEVEL",
        help="Log level for messages on stderr (DEBUG, INFO, WARNING, ERROR).")] = "WARNING",
    version: Annotated[bool | None, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None,
) -> None:
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        raise CliError(f"--log-level: unknown level {log_level!r}")
    logging.basicConfig(stream=sys.stderr, level=level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    set_root(RootOptions(database_url=database_url))
    show_help_if_bare(ctx)


app.command("worker")(worker.worker)
app.command("workers")(worker.workers)
app.command("rate-limits")(worker.rate_limits)
app.command("submit")(submit.submit)
app.command("run")(run.run)
app.add_typer(jobs.job_app, name="job")
app.add_typer(queues.queue_app, name="queue")
app.add_typer(flow.type_app, name="type")
app.add_typer(flow.limit_app, name="limit")
app.add_typer(projects.project_app, name="project")
app.add_typer(schedules.schedule_app, name="schedule")
app.add_typer(webhooks.webhook_app, name="webhook")
app.command("spend")(spend.spend)
app.command("serve")(server.serve)
app.command("mcp")(server.mcp)
app.add_typer(db.db_app, name="db")
app.command("prune")(db.prune)
# `tether prices`, `tether demo` (budgets/pricing work) and `tether token` (REST API work)
# come from their own modules when present; see plugins.py.
register_plugins(app)


def _usage_error(exc: click.ClickException) -> int:
    """Click's parse errors (bad flag, bad value, missing argument) as one line.

    An unknown command's message is taken as Typer wrote it: Typer already appends the close
    names ("Did you mean 'job'?") and click 8.4's ``NoSuchCommand`` would append them again."""
    no_such_command = getattr(click.exceptions, "NoSuchCommand", ())
    text = exc.message if isinstance(exc, no_such_command) else exc.format_message()
    message = text.strip().rstrip(".")
    if message:
        ctx = getattr(exc, "ctx", None)
        hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
        report(message + hint, "usage_error")
    return int(getattr(exc, "exit_code", EXIT_USAGE))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script exits with it).

    A bare ``tether --version`` answers before the command tree is built: building it
    inspects the signature of every command, which is most of what the answer would cost."""
    args = list(argv) if argv is not None else sys.argv[1:]
    if args == ["--version"]:
        print(f"tether {__version__}")
        return EXIT_OK
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=args, prog_name="tether", standalone_mode=False)
    except typer.Abort:
        err().print("aborted")
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        return _usage_error(exc)
    except CliError as exc:
        report(exc.message, exc.code)
        return exc.exit_code
    except TetherError as exc:
        report(exc.message, exc.code)
        return exit_code_for(exc)
    finally:
        close_all()
    return rv if isinstance(rv, int) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
