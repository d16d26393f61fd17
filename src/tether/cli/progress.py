"""The live progress of one job on stderr: state, stage, attempts, calls, spend vs budget.

On a terminal it is a rich ``Live`` line that redraws in place; otherwise (a pipe, a CI log) a
plain line is printed each time something in it changes, so logs stay short and readable.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table

from . import views
from .output import err, state_text

if TYPE_CHECKING:
    from ..records import Job


def describe(job: Job, reused: int | None = None) -> tuple[str, ...]:
    """The fields of the progress line, as markup, in order."""
    parts = [f"job {job.id} {state_text(job.state)}"]
    if job.stage:
        parts.append(f"stage {escape(job.stage)}")
    parts.append(f"attempt {job.attempt_count}/{job.max_attempts}")
    parts.append(f"calls {escape(views.calls_text(job, reused))}")
    parts.append(f"spent {escape(views.spend(job))}")
    return tuple(parts)


class Progress:
    """``with Progress() as p: p.update(job)``; ``p.update`` is cheap to call on every poll."""

    def __init__(self, console: Console | None = None, *, enabled: bool = True) -> None:
        self.console = console or err()
        self.enabled = enabled
        self.live_mode = enabled and self.console.is_terminal
        self._started = time.monotonic()
        self._last: tuple[str, ...] | None = None
        self._live: Live | None = None
        self._spinner = Spinner("dots", style="cyan")

    def __enter__(self) -> Progress:
        if self.live_mode:
            self._live = Live(console=self.console, refresh_per_second=8, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def _render(self, fields: tuple[str, ...]) -> Table:
        grid = Table.grid(padding=(0, 1))
        grid.add_row(self._spinner, " · ".join(fields),
                     f"[dim]{time.monotonic() - self._started:.1f}s[/]")
        return grid

    def update(self, job: Job, reused: int | None = None) -> None:
        if not self.enabled:
            return
        fields = describe(job, reused)
        if self._live is not None:
            self._live.update(self._render(fields))
        elif fields != self._last:
            self.console.print(" · ".join(fields)
                               + f" [dim]{time.monotonic() - self._started:.1f}s[/]")
        self._last = fields
