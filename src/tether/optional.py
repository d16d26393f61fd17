"""Optional parts of tether, installed by extras, and the one error when one is missing.

``pip install tether`` is the library, the worker, the CLI and SQLite. The REST API and
dashboard (``server``), the MCP server (``mcp``), the PostgreSQL backend (``postgres``) and the
agent integrations (``pydantic-ai``, ``openai-agents``) need packages that the base install
leaves out, so the modules that use them are imported only through ``load`` (or, for a module
the user imports, ``requires``): a missing package becomes ``MissingExtra`` naming the extra
to install, never a bare ``ModuleNotFoundError`` from deep inside a third-party import.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingExtra

PROVIDES: dict[str, frozenset[str]] = {
    "postgres": frozenset({"psycopg", "psycopg_pool", "psycopg_binary"}),
    "server": frozenset({"fastapi", "starlette", "uvicorn", "jinja2", "prometheus_client",
                         "pydantic", "pydantic_core", "anyio"}),
    "mcp": frozenset({"mcp", "starlette", "uvicorn", "pydantic", "pydantic_core", "anyio"}),
    "pydantic-ai": frozenset({"pydantic_ai", "pydantic_graph", "openai", "pydantic",
                              "pydantic_core"}),
    "openai-agents": frozenset({"agents", "openai", "pydantic", "pydantic_core"}),
    "webhooks": frozenset({"httpx", "httpcore", "h11", "anyio"}),
}
"""The top-level modules each extra brings; a missing one of these means the extra is absent."""


def load(module: str, *, extra: str, what: str) -> ModuleType:
    """Import ``module`` (a part of tether that needs ``extra``).

    Raises ``MissingExtra`` when a package of that extra is not installed; any other import
    failure (a bug, a broken install) propagates unchanged, so it is not mistaken for one."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top in PROVIDES[extra]:
            raise MissingExtra(what, extra, module=exc.name) from exc
        raise


def requires(extra: str, what: str, exc: ModuleNotFoundError) -> MissingExtra:
    """The error to raise for ``exc``, met importing a module of tether that needs ``extra``:
    ``MissingExtra`` when a package of that extra is missing, else ``exc`` itself (a bug)."""
    top = (exc.name or "").split(".")[0]
    if top in PROVIDES[extra]:
        return MissingExtra(what, extra, module=exc.name)
    raise exc
