"""``tether prices show``: the price profile new jobs pin (default plus your override)."""

from __future__ import annotations

import json
import os
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..core.pricing import load_profile
from .output import out

prices_app = typer.Typer(help="Price profiles (USD per million tokens).", no_args_is_help=True)


@prices_app.command("show")
def show(
    profile: Annotated[Optional[str], typer.Option(
        "--profile", envvar="TETHER_PRICE_PROFILE", metavar="FILE",
        help="A TOML profile overriding or adding to the shipped default.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show every priced model with its input, output and cached-input price."""
    prof = load_profile(profile or os.environ.get("TETHER_PRICE_PROFILE"))
    if as_json:
        print(json.dumps(dict(prof.to_dict(), id=prof.id), indent=2))
        return
    table = Table(title=f"{prof.name} — effective {prof.effective_date}")
    for col in ("provider", "model", "input $/Mtok", "output $/Mtok", "cached input $/Mtok"):
        table.add_column(col, justify="right" if "$" in col else "left")
    for m in prof.to_dict()["models"]:
        table.add_row(m["provider"], m["model"], m["input_per_mtok"], m["output_per_mtok"],
                      m.get("cached_input_per_mtok", "—"))
    out().print(table)
