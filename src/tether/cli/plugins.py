"""Commands that live in modules written alongside the CLI, added only when present.

* ``tether.cli.prices`` and ``tether.cli.demo`` (the budgets/pricing work): each exports
  ``register(root: typer.Typer) -> None``; failing that, ``prices_app`` (a Typer mounted as
  ``tether prices``) or ``demo`` (a function registered as ``tether demo``).
* ``tether.cli.token_cmd`` (the REST API work): exports ``token_app``, mounted as ``tether token``.

A missing module leaves its command out; a module that fails to import leaves it out too, with
one warning on stderr, so the rest of the CLI keeps working.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

import typer

PLUGINS = ("tether.cli.prices", "tether.cli.demo", "tether.cli.token_cmd")


def _import(name: str) -> ModuleType | None:
    try:
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - one broken command must not take the CLI down
        short = name.rsplit(".", 1)[-1]
        print(f"warning: commands from {short} are unavailable: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return None


def register_plugins(root: typer.Typer) -> list[str]:
    """Add every present plugin's commands to ``root``; returns the modules added."""
    added = []
    for name in PLUGINS:
        module = _import(name)
        if module is None:
            continue
        if callable(getattr(module, "register", None)):
            module.register(root)
        elif isinstance(getattr(module, "prices_app", None), typer.Typer):
            root.add_typer(module.prices_app, name="prices")
        elif callable(getattr(module, "demo", None)):
            root.command("demo")(module.demo)
        elif isinstance(getattr(module, "token_app", None), typer.Typer):
            root.add_typer(module.token_app, name="token")
        else:
            continue
        added.append(name)
    return added
