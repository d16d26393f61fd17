"""``tether mcp``: the MCP server (official ``mcp`` SDK, ``MCPServer``), stdio or streamable HTTP.

Every operation of the REST API is a tool (``job_tools``, ``control_tools``, ``admin_tools``,
``flow_tools``, ``spend_tools``, ``budget_tools``, ``schedule_tools``, ``webhook_tools``);
every tool refuses arguments it does not know, and every failure is a tool error whose text
starts with the stable code REST would give (``failures``).

Scoping is the REST API's: over stdio the whole session acts as the token given with
``--token`` / ``TETHER_MCP_TOKEN`` (an invalid token refuses to start; it is read again at
every tool call, so a revoked token's next call is ``unauthorized``, as its next REST request
is), or unrestricted only with ``insecure_no_auth=True``. Over streamable HTTP every request carries
``Authorization: Bearer <token>`` and each tool call is scoped by the token of its own request.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ValidationError

from .. import __version__
from ..app import Tether
from ..loader import app_at
from ..errors import ConfigurationError
from ..wire.principal import Principal
from ..wire.problems import Problem
from . import failures
from .admin_tools import admin_tools
from .flow_tools import flow_tools
from .arguments import PrincipalFor
from .budget_tools import budget_tools
from .control_tools import control_tools
from .http_auth import BearerGate, principal_from_request
from .job_tools import job_tools
from .schedule_tools import schedule_tools
from .webhook_tools import webhook_tools
from .spend_tools import spend_tools

log = logging.getLogger("tether.mcp")

INSTRUCTIONS = (
    "tether runs durable, budgeted jobs. Submit a job with tether_submit_job (pass an "
    "idempotency_key so a retry of your call cannot create a second job), follow it with "
    "tether_get_job or tether_get_events (after= the last seq you saw), and control it with "
    "tether_cancel_job, tether_pause_job, tether_resume_job, tether_retry_job (failed), "
    "tether_requeue_job (interrupted) and tether_set_job_budget (raise limits to clear a "
    "budget_exhausted pause); tether_get_project_budget shows a project's budget (a job "
    "paused with period_budget_exhausted resumes at its run_after); tether_fork_job re-runs "
    "a job from a stage without paying again for the stages before it; tether_spend reports "
    "where the money went; tether_create_schedule defines a cron schedule that enqueues a "
    "job at each tick (tether_list_schedules, tether_pause_schedule, ... manage it). A job in "
    "state waiting may wait for an answer: tether_get_job shows its question (waiting_for), "
    "tether_signal_job answers it. Errors start with a stable code such as job_not_found, "
    "invalid_transition or validation_error; unknown arguments are refused."
)


class TetherServer(MCPServer):
    """An ``MCPServer`` whose failed calls carry tether's stable codes.

    The SDK would prefix every failure with ``Error executing tool ...`` and show arguments it
    rejected as a pydantic dump; here the text starts with the code, and the structured content
    is the problem document REST gives for the same failure.
    """

    def __init__(self, tools: list[Tool], **options: Any) -> None:
        super().__init__(tools=tools, **options)
        self.argument_names = {t.name: list(t.parameters.get("properties", {})) for t in tools}

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                return failures.from_validation(name, cause, self.argument_names.get(name, ()))
            if name not in self.argument_names:
                return failures.error_result(404, "not_found", f"no tool named {name!r}")
            return failures.from_exception(name, cause or exc)


def build_server(app: Tether, principal_for: PrincipalFor) -> MCPServer:
    """An ``MCPServer`` exposing the tether tools; ``principal_for(ctx)`` names the caller."""
    tools = [*job_tools(app, principal_for), *control_tools(app, principal_for),
             *admin_tools(app, principal_for), *flow_tools(app, principal_for),
             *spend_tools(app, principal_for), *budget_tools(app, principal_for),
             *schedule_tools(app, principal_for), *webhook_tools(app, principal_for)]
    return TetherServer(tools, name="tether", version=__version__, instructions=INSTRUCTIONS)


def stdio_principal(app: Tether, token: str | None, insecure_no_auth: bool) -> Principal:
    """The principal of a stdio session: the token's, or unrestricted when explicitly insecure."""
    token = _stdio_token(token)
    if token:
        info = app.store.resolve_token(token)
        if info is None:
            raise ConfigurationError("the MCP token is unknown or revoked")
        return Principal(info)
    if insecure_no_auth:
        print("tether mcp: no token, running UNRESTRICTED (--insecure-no-auth): every project "
              "is visible to this client", file=sys.stderr)
        return Principal(None)
    raise ConfigurationError("tether mcp needs a token (--token or TETHER_MCP_TOKEN, from "
                             "`tether token create`) or an explicit --insecure-no-auth")


def _stdio_token(token: str | None) -> str | None:
    return token or os.environ.get("TETHER_MCP_TOKEN") or None


def stdio_caller(app: Tether, token: str | None, insecure_no_auth: bool) -> PrincipalFor:
    """Names the caller of each tool call of a stdio session: ``stdio_principal`` at start
    (a bad token refuses to start), then the token read again at every call, so a session
    keeps no right its token has lost (one indexed read per call)."""
    who = stdio_principal(app, token, insecure_no_auth)
    secret = _stdio_token(token)
    if secret is None:
        return lambda ctx: who

    def caller(ctx: Context) -> Principal:
        info = app.store.resolve_token(secret)
        if info is None:
            raise Problem(401, "unauthorized", "this session's token was revoked: restart "
                          "tether mcp with a live one (`tether token create`)")
        return Principal(info)
    return caller


def run(transport: str = "stdio", app_spec: str | None = None, database_url: str | None = None,
        token: str | None = None, host: str = "127.0.0.1", port: int = 8001, *,
        insecure_no_auth: bool = False, path: str = "/mcp") -> None:
    """Serve MCP until the client disconnects (stdio) or the process is stopped (http)."""
    app = app_at(app_spec, database_url, create_database=False)
    try:
        app.store  # an existing tether database, or NoDatabase before serving  # noqa: B018
        if transport == "stdio":
            build_server(app, stdio_caller(app, token, insecure_no_auth)).run("stdio")
        elif transport in ("http", "streamable-http"):
            _run_http(app, host, port, path, insecure_no_auth)
        else:
            raise ConfigurationError(f"unknown MCP transport {transport!r}: use stdio or http")
    finally:
        app.close()


def http_app(app: Tether, *, host: str = "127.0.0.1", path: str = "/mcp",
             insecure_no_auth: bool = False) -> Any:
    """The streamable-HTTP ASGI app, behind the bearer gate unless insecure."""
    if insecure_no_auth:
        server = build_server(app, lambda ctx: Principal(None))
        return server.streamable_http_app(streamable_http_path=path, host=host)
    server = build_server(app, principal_from_request)
    return BearerGate(server.streamable_http_app(streamable_http_path=path, host=host), app)


def _run_http(app: Tether, host: str, port: int, path: str, insecure_no_auth: bool) -> None:
    import uvicorn

    if insecure_no_auth:
        log.warning("MCP over HTTP WITHOUT AUTH (--insecure-no-auth): local use only")
    uvicorn.run(http_app(app, host=host, path=path, insecure_no_auth=insecure_no_auth),
                host=host, port=port)
