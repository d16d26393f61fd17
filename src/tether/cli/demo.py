"""``tether demo``: the pipeline, a SIGKILL, a budget pause, a raise, a finish, a summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .output import err, out


def demo(
    folder: Annotated[Path | None, typer.Option(
        "--dir", help="Where the demo's SQLite file, provider bill and output go.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Run the example LLM pipeline through a crash and a budget limit (a few seconds)."""
    from ..demo import run_demo

    folder = folder or Path("tether-demo")
    result = run_demo(folder.resolve(), say=lambda s: err().print(f"[dim]demo:[/dim] {s}"))
    if as_json:
        print(json.dumps(vars(result), indent=2, default=str))
        return
    table = Table(title=f"tether demo — job {result.job_id} {result.state}", show_header=False)
    table.add_column("what")
    table.add_column("figure", justify="right")
    rows = [
        ("provider calls billed (the provider's own bill)", str(result.calls_billed)),
        ("calls billed twice (in flight at the kill: unconfirmed, counted as spent)",
         f"{result.calls_billed_twice} (unconfirmed: {result.calls_unconfirmed})"),
        ("calls answered from the journal instead of the provider (distinct keys)",
         f"{result.calls_reused} of {result.calls_planned} planned "
         f"({result.journal_answers} answers over all attempts)"),
        ("worker processes SIGKILLed mid-stage", str(result.kills)),
        ("budget pauses", str(result.budget_pauses)),
        ("spend recorded by tether", f"${result.spent_usd:.6f}"),
        ("spend billed by the provider", f"${result.billed_usd:.6f}"),
        ("the same calls as one provider batch (ctx.batch, half price)",
         f"${result.batch_usd:.6f}"),
        ("first budget / raised budget", f"${result.first_limit_usd} / ${result.final_limit_usd}"),
        ("worst-case estimate before running", f"${result.estimated_usd:.6f}"),
        ("attempts", str(result.attempts)),
        ("questions exported", str(result.questions)),
        ("output file", str(result.output)),
        ("database", result.database_url),
        ("seconds", f"{result.seconds:.1f}"),
    ]
    for what, figure in rows:
        table.add_row(what, figure)
    out().print(table)
    out().print(f"verdict: {result.verdict}")
