"""``tether prices show``: the price profile new jobs pin (default plus your override)."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Annotated

import typer
from rich.table import Table

from .output import out

prices_app = typer.Typer(help="Price profiles (USD per million tokens).", no_args_is_help=True)


@prices_app.command("show")
def show(
    profile: Annotated[str | None, typer.Option(
        "--profile", envvar="TETHER_PRICE_PROFILE", metavar="FILE",
        help="A TOML profile overriding or adding to the shipped default.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show every priced model with its input, output, cached-input and cache-write prices."""
    from ..core.pricing import load_profile

    prof = load_profile(profile or os.environ.get("TETHER_PRICE_PROFILE"))
    if as_json:
        print(json.dumps(dict(prof.to_dict(), id=prof.id), indent=2))
        return
    table = Table(title=f"{prof.name} — effective {prof.effective_date}")
    for col in ("provider", "model", "input $/Mtok", "output $/Mtok", "cached input $/Mtok",
                "cache write $/Mtok", "1h cache write $/Mtok"):
        table.add_column(col, justify="right" if "$" in col else "left")
    for m in prof.to_dict()["models"]:
        table.add_row(m["provider"], m["model"], m["input_per_mtok"], m["output_per_mtok"],
                      *(m.get(name, "—") for name in ("cached_input_per_mtok",
                                                      "cache_write_per_mtok",
                                                      "cache_write_1h_per_mtok")))
    out().print(table)


def dry_run(app, spec, *, as_json: bool = False) -> int:  # noqa: ANN001 - Tether, SubmitSpec
    """``tether submit --dry-run``: price a submission with the job type's estimator and the
    profile it would pin, compare with its budget, enqueue nothing. Exit 0 when the estimate
    fits the budget's cost limit (or there is none), 1 when it does not."""
    est = app.estimate(spec.type, spec.payload)
    limit = spec.budget.get("max_cost_usd") if spec.budget else None
    fits = limit is None or est.cost_usd <= Decimal(str(limit))
    if as_json:
        print(json.dumps(dict(est.to_dict(), type=spec.type, max_cost_usd=None if limit is None
                              else str(limit), fits_budget=fits), indent=2))
        return 0 if fits else 1
    table = Table(title=f"{spec.type}: worst-case cost before running ({est.profile})")
    for col in ("provider", "model", "calls", "input tokens/call", "output tokens/call", "USD"):
        table.add_column(col, justify="left" if col in ("provider", "model") else "right")
    for line in est.lines:
        table.add_row(line["provider"], line["model"], str(line["calls"]),
                      str(line["input_tokens"]), str(line["output_tokens"]), line["cost_usd"])
    table.add_row("total", "", str(est.calls), str(est.input_tokens), str(est.output_tokens),
                  f"{est.cost_usd:.6f}")
    out().print(table)
    if limit is not None:
        verdict = "fits within" if fits else "EXCEEDS"
        out().print(f"worst case ${est.cost_usd:.6f} {verdict} the budget of ${limit}")
    return 0 if fits else 1
