"""Where the CLI writes and how it fails.

Promises: data goes to stdout (a rich table for people, ``--json`` for scripts), progress,
logs and errors go to stderr; colour follows rich's rules (off when ``NO_COLOR`` is set or the
stream is not a terminal). An error is one line, ``error: <message> (<code>)``, and its exit
code is one of the constants below.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, UTC
from decimal import Decimal
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import (
    ConfigurationError, IdempotencyConflict, InvalidArgument, InvalidPayload, JobNotFound,
    JobStateError, QueueNotFound, ScheduleNotFound, TetherError, UnknownJobType, UnpricedModel,
    WebhookNotFound,
)

EXIT_OK = 0
EXIT_FAILED = 1
"""``run``: the job ended failed, cancelled, paused or interrupted (or the wait timed out);
any other command: an operational failure (the store could not be reached, ...)."""
EXIT_USAGE = 2
"""Bad flags, invalid input, or a transition the job's state does not allow."""
EXIT_NOT_FOUND = 3
EXIT_INTERRUPTED = 130

_USAGE_ERRORS = (ConfigurationError, UnknownJobType, InvalidPayload, InvalidArgument,
                 JobStateError, IdempotencyConflict, UnpricedModel)

_NON_TTY_WIDTH = 160


class CliError(Exception):
    """A user-facing failure raised by a command: printed as one line, then exit ``exit_code``."""

    def __init__(self, message: str, *, code: str = "usage_error",
                 exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.exit_code = exit_code


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    console = Console(file=stream, stderr=stderr, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console.width = max(console.width, _NON_TTY_WIDTH)
    return console


def out() -> Console:
    """A console on the current stdout (built per call so tests and redirects are honoured)."""
    return _console(stderr=False)


def err() -> Console:
    """A console on the current stderr, for progress, notes and errors."""
    return _console(stderr=True)


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def dumps(data: Any, *, indent: int | None = 2) -> str:
    return json.dumps(data, indent=indent, default=_default, ensure_ascii=False)


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (records through their ``to_dict()``)."""
    if isinstance(data, list):
        data = [item.to_dict() if hasattr(item, "to_dict") else item for item in data]
    elif hasattr(data, "to_dict"):
        data = data.to_dict()
    sys.stdout.write(dumps(data) + "\n")
    sys.stdout.flush()


def emit_json_line(data: Any) -> None:
    """One compact JSON object per line (for streams such as ``job events --follow``)."""
    sys.stdout.write(dumps(data.to_dict() if hasattr(data, "to_dict") else data, indent=None)
                     + "\n")
    sys.stdout.flush()


def show(view: Any, *args: Any, **kwargs: Any) -> None:
    """Print ``view(*args, width=<stdout's width>, **kwargs)`` on stdout (tables drop columns
    on narrow terminals)."""
    console = out()
    console.print(view(*args, width=console.width, **kwargs))


def note(message: str) -> None:
    """A human note on stderr (never mixed into data)."""
    err().print(escape(message), style="dim", soft_wrap=True)


def exit_code_for(exc: TetherError) -> int:
    if isinstance(exc, (JobNotFound, QueueNotFound, ScheduleNotFound, WebhookNotFound)):
        return EXIT_NOT_FOUND
    if isinstance(exc, _USAGE_ERRORS):
        return EXIT_USAGE
    return EXIT_FAILED


def report(message: str, code: str) -> None:
    """Print the one-line error to stderr."""
    err().print(f"[bold red]error:[/] {escape(message)} [dim]({escape(code)})[/]", soft_wrap=True)


def fail(message: str, *, code: str = "usage_error", exit_code: int = EXIT_USAGE) -> NoReturn:
    raise CliError(message, code=code, exit_code=exit_code)


def done(exit_code: int) -> NoReturn:
    raise typer.Exit(exit_code)


# --- formatting helpers ------------------------------------------------------------------------

def when(value: datetime | None) -> str:
    """A timestamp in local time, to the second (empty for ``None``)."""
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def when_short(value: datetime | None) -> str:
    """``15:04:05`` for today (local time), else ``2026-05-01 15:04``."""
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    local = value.astimezone()
    if local.date() == datetime.now().astimezone().date():
        return local.strftime("%H:%M:%S")
    return local.strftime("%Y-%m-%d %H:%M")


def usd(value: Any) -> str:
    """Money with enough places for sub-cent LLM calls: ``$0.0123``, ``$0.50``, ``$2.00``."""
    if value is None:
        return "-"
    amount = Decimal(str(value))
    if amount == 0:
        return "$0"
    if abs(amount) >= 1:
        return f"${amount:,.2f}"
    places = 4 if abs(amount) >= Decimal("0.0001") else 6
    text = f"{amount:.{places}f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


STATE_STYLES = {
    "queued": "cyan", "leased": "blue", "running": "blue", "retry_wait": "yellow",
    "waiting": "cyan",
    "pausing": "yellow", "paused": "yellow", "cancelling": "magenta", "cancelled": "magenta",
    "interrupted": "red", "succeeded": "green", "failed": "bold red",
}


def state_text(state: Any) -> str:
    """A job state as rich markup, coloured when colour is on."""
    name = str(state)
    return f"[{STATE_STYLES.get(name, 'default')}]{escape(name)}[/]"
