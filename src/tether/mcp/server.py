"""``tether mcp``: the MCP server (official ``mcp`` SDK, ``MCPServer``), stdio or streamable HTTP.

Tools: ``tether_submit_job``, ``tether_get_job``, ``tether_list_jobs``, ``tether_get_events``,
``tether_cancel_job``, ``tether_pause_job``, ``tether_resume_job``.

Scoping is the REST API's: over stdio the whole session acts as the token given with
``--token`` / ``TETHER_MCP_TOKEN`` (resolved once at start; an invalid token refuses to start),
or unrestricted only with ``insecure_no_auth=True``. Over streamable HTTP every request carries
``Authorization: Bearer <token>`` and each tool call is scoped by the token of its own request.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Annotated, Any, Callable

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from .. import __version__
from ..wire.principal import Principal
from ..wire.problems import Problem
from ..app import Tether, load_app
from ..errors import ConfigurationError, TetherError
from .http_auth import BearerGate, principal_from_request
from .tools import Tools, translate

log = logging.getLogger("tether.mcp")

INSTRUCTIONS = (
    "tether runs durable, budgeted jobs. Submit a job with tether_submit_job (pass an "
    "idempotency_key so a retry of your call cannot create a second job), follow it with "
    "tether_get_job or tether_get_events (after= the last seq you saw), and control it with "
    "tether_cancel_job / tether_pause_job / tether_resume_job. Errors start with a stable code "
    "such as job_not_found or invalid_transition."
)

JobId = Annotated[int, Field(ge=1, description="the job id")]
PrincipalFor = Callable[[Context], Principal]


def build_server(app: Tether, principal_for: PrincipalFor) -> MCPServer:
    """An ``MCPServer`` exposing the tether tools; ``principal_for(ctx)`` names the caller."""
    server = MCPServer("tether", version=__version__, instructions=INSTRUCTIONS)
    tools = Tools(app)

    def call(ctx: Context, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return method(principal_for(ctx), *args, **kwargs)
        except (TetherError, Problem) as exc:
            raise translate(exc) from None

    @server.tool(name="tether_submit_job", description=(
        "Submit a job. Returns {created, job}; created is false when idempotency_key already "
        "named a job with the same configuration (that job is returned)."))
    def submit_job(
        ctx: Context,
        type: Annotated[str, Field(min_length=1, max_length=200,
                                   description="a registered job type")],
        payload: Annotated[Any, Field(description="any JSON value for the job")] = None,
        project: Annotated[str | None, Field(description="default: the token's only project")] = None,
        idempotency_key: Annotated[str | None, Field(max_length=200)] = None,
        queue: str | None = None,
        priority: Annotated[int | None, Field(ge=-2**31, le=2**31 - 1)] = None,
        max_attempts: Annotated[int | None, Field(ge=1, le=1000)] = None,
        run_after: Annotated[str | None, Field(description="ISO 8601 time")] = None,
        budget: Annotated[dict[str, Any] | None, Field(description=(
            "limits: max_cost_usd (decimal string), max_calls, max_input_tokens, "
            "max_output_tokens, max_duration_s, max_examples"))] = None,
    ) -> dict[str, Any]:
        return call(ctx, tools.submit_job, type, payload, project=project,
                    idempotency_key=idempotency_key, queue=queue, priority=priority,
                    max_attempts=max_attempts, run_after=run_after, budget=budget)

    @server.tool(name="tether_get_job", description=(
        "A job: state, stage, attempts, cost and budget, error, result, lease."))
    def get_job(ctx: Context, job_id: JobId) -> dict[str, Any]:
        return call(ctx, tools.get_job, job_id)

    @server.tool(name="tether_list_jobs", description=(
        "Jobs newest first; pass next_cursor back as cursor for the next page."))
    def list_jobs(
        ctx: Context, project: str | None = None,
        state: Annotated[str | None, Field(description="queued, running, succeeded, failed, "
                                                      "paused, cancelled, ...")] = None,
        type: str | None = None, queue: str | None = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20, cursor: str | None = None,
    ) -> dict[str, Any]:
        return call(ctx, tools.list_jobs, project=project, state=state, type=type, queue=queue,
                    limit=limit, cursor=cursor)

    @server.tool(name="tether_get_events", description=(
        "A job's event log in seq order, after the given seq. Poll with after=next_after."))
    def get_events(ctx: Context, job_id: JobId,
                   after: Annotated[int, Field(ge=0)] = 0,
                   limit: Annotated[int, Field(ge=1, le=1000)] = 200) -> dict[str, Any]:
        return call(ctx, tools.get_events, job_id, after=after, limit=limit)

    @server.tool(name="tether_cancel_job", description=(
        "Cancel a job: at once unless it is running, else at its next safe boundary."))
    def cancel_job(ctx: Context, job_id: JobId,
                   reason: Annotated[str | None, Field(max_length=1000)] = None) -> dict[str, Any]:
        return call(ctx, tools.control, "cancel", job_id, reason=reason)

    @server.tool(name="tether_pause_job", description=(
        "Pause a job: at once if waiting, else at its next safe boundary. Checkpoints are kept."))
    def pause_job(ctx: Context, job_id: JobId) -> dict[str, Any]:
        return call(ctx, tools.control, "pause", job_id)

    @server.tool(name="tether_resume_job", description=(
        "Resume a paused job; it continues from its last checkpoint."))
    def resume_job(ctx: Context, job_id: JobId) -> dict[str, Any]:
        return call(ctx, tools.control, "resume", job_id)

    return server


def _open(app_spec: str | None, database_url: str | None) -> Tether:
    if app_spec:
        app = load_app(app_spec)
        if database_url:
            app.database_url = database_url
        return app
    return Tether(database_url)


def stdio_principal(app: Tether, token: str | None, insecure_no_auth: bool) -> Principal:
    """The principal of a stdio session: the token's, or unrestricted when explicitly insecure."""
    token = token or os.environ.get("TETHER_MCP_TOKEN") or None
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


def run(transport: str = "stdio", app_spec: str | None = None, database_url: str | None = None,
        token: str | None = None, host: str = "127.0.0.1", port: int = 8001, *,
        insecure_no_auth: bool = False, path: str = "/mcp") -> None:
    """Serve MCP until the client disconnects (stdio) or the process is stopped (http)."""
    app = _open(app_spec, database_url)
    try:
        if transport == "stdio":
            who = stdio_principal(app, token, insecure_no_auth)
            build_server(app, lambda ctx: who).run("stdio")
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
