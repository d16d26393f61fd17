"""``tether spend``: where the money went, from the cost ledger, grouped as asked.

A table for people (with a total row), ``--json`` (the facade's report: rows, total, and each
project's budget when grouped by project) or ``--csv`` (one line per group, money as exact
decimal text) for scripts.
"""

from __future__ import annotations

import csv
import sys
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ..core.spend import DEFAULT_BY, DIMENSIONS, SpendReport, SpendRow
from .options import DatabaseUrl, Json, open_app
from .output import emit_json, fail, out, usd

_COUNTS = ("calls", "input_tokens", "output_tokens", "cost_usd", "reserved_usd",
           "unconfirmed_calls")


def spend(
    by: Annotated[str, typer.Option(
        "--by", metavar="DIMS",
        help="Group by these, comma-separated, in this order: "
             + ", ".join(DIMENSIONS) + ".")] = ",".join(DEFAULT_BY),
    since: Annotated[str | None, typer.Option(
        "--since", metavar="WHEN",
        help="Only calls at or after WHEN: a span back from now (7d, 24h, 1h30m) or ISO "
             "8601 (UTC unless an offset is given).")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", metavar="WHEN", help="Only calls before WHEN (same forms as --since).")] = None,
    tz: Annotated[str | None, typer.Option(
        "--tz", metavar="ZONE",
        help="Time zone of days, weeks and months (IANA name, e.g. Europe/Paris) "
             "[default: UTC].")] = None,
    project: Annotated[list[str] | None, typer.Option(
        "--project", metavar="PROJECT", help="Only this project (repeat for several).")] = None,
    as_json: Json = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV on stdout.")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Spend from the cost ledger, grouped (default: by project, model and day).

    Example: tether spend --by model --since 7d
    """
    if as_json and as_csv:
        fail("give --json or --csv, not both")
    app = open_app(database_url)
    report = app.spend(by, since=since, until=until, tz=tz, projects=project or None)
    if as_json:
        emit_json(report)
    elif as_csv:
        _csv(report)
    else:
        out().print(_table(report))


def _csv(report: SpendReport) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow([*report.by, *_COUNTS])
    for row in report.rows:
        data = row.to_dict(report.by)
        writer.writerow(["" if data[d] is None else data[d] for d in report.by]
                        + [data[c] for c in _COUNTS])
    sys.stdout.flush()


def _window(report: SpendReport) -> str:
    since = report.since.isoformat(timespec="seconds") if report.since else "the start"
    until = report.until.isoformat(timespec="seconds") if report.until else "now"
    return f"spend from {since} to {until}" + (f" ({report.tz})" if report.tz != "UTC" else "")


def _table(report: SpendReport) -> Table:
    table = Table(title=_window(report))
    for d in report.by:
        table.add_column(d.replace("_", " "))
    for name in ("calls", "input tokens", "output tokens", "cost", "reserved"):
        table.add_column(name, justify="right")

    def cells(row: SpendRow) -> list[str]:
        return [f"{row.calls:,}", f"{row.input_tokens:,}", f"{row.output_tokens:,}",
                usd(row.cost_usd), usd(row.reserved_usd)]

    for row in report.rows:
        dims = [escape(v) if v is not None else "-" for v in row.key(report.by)]
        table.add_row(*dims, *cells(row))
    if report.by:
        table.add_section()
    label = ["total"] + [""] * (len(report.by) - 1) if report.by else []
    table.add_row(*label, *cells(report.total), style="bold")
    if not report.rows:
        table.caption = "no calls in this window"
    elif report.total.unconfirmed_calls:
        table.caption = (f"{report.total.unconfirmed_calls} unconfirmed calls (outcome unknown "
                         "after a crash) are counted at their reservation")
    return table
