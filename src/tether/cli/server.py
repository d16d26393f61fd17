"""``tether serve`` (REST API and dashboard) and ``tether mcp`` (the MCP server).

Both are thin: they import their server lazily, so the rest of the CLI never pays for FastAPI
or the MCP SDK (and works without them: a missing extra is one ``missing_extra`` error naming
it), and hand it the resolved ``--app`` and database URL.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..optional import load
from .options import AppSpec, DatabaseUrl, database_url as resolve_url
from .output import CliError


def _load(module: str, attr: str, extra: str, what: str) -> Any:
    return getattr(load(module, extra=extra, what=what), attr)


def serve(
    app_spec: AppSpec = None,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(
        "--port", min=1, max=65535, help="Port to listen on.")] = 8000,
    worker: Annotated[bool | None, typer.Option(
        "--worker/--no-worker",
        help="Also run a worker beside the server (needs --app) [default: TETHER_RUN_WORKER].",
        show_default=False)] = None,
    insecure_no_auth: Annotated[bool, typer.Option(
        "--insecure-no-auth", help="Serve without bearer tokens (local use only).")] = False,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn's log level.")] = "info",
    database_url: DatabaseUrl = None,
) -> None:
    """Serve the REST API (/api/v1) and the dashboard until Ctrl-C.

    Example: tether serve --app myproject.jobs:app --port 8000 --worker
    """
    run = _load("tether.api.server", "serve", "server", "the REST API")
    run(app_spec, host=host, port=port, database_url=resolve_url(database_url),
        insecure_no_auth=insecure_no_auth, run_worker=worker, log_level=log_level)


def mcp(
    transport: Annotated[str, typer.Option(
        "--transport", metavar="stdio|http",
        help="stdio (for a local agent or IDE) or http (streamable HTTP).")] = "stdio",
    token: Annotated[str | None, typer.Option(
        "--token", envvar="TETHER_MCP_TOKEN", metavar="SECRET",
        help="stdio: the API token whose projects the session may act on.")] = None,
    host: Annotated[str, typer.Option(
        "--host", help="http: interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535,
                                      help="http: port to listen on.")] = 8001,
    insecure_no_auth: Annotated[bool, typer.Option(
        "--insecure-no-auth",
        help="Act on every project without a token (local use only).")] = False,
    app_spec: AppSpec = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve tether's tools over MCP (stdio by default) for agents and IDEs.

    Example: tether mcp --token $TETHER_MCP_TOKEN
    """
    if transport not in ("stdio", "http"):
        raise CliError(f"--transport: use stdio or http, not {transport!r}")
    run = _load("tether.mcp.server", "run", "mcp", "the MCP server")
    run(transport, app_spec, resolve_url(database_url), token, host, port,
        insecure_no_auth=insecure_no_auth)
