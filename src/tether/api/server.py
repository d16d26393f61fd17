"""The REST API application and ``tether serve``.

``create_app(tether_app)`` builds the FastAPI app: every route of the REST API (docs/api.md)
under ``/api/v1``, the public callback URLs under ``/callbacks`` (``routes_callbacks.py``: the
token in the URL is the credential), OpenAPI at ``/openapi.json``, ``/healthz`` and
``/metrics`` at the root as well, problem+json errors, a request body limit,
``Cache-Control: no-store``, and bearer-token auth. Nothing is loaded from another site:
there is no Swagger UI page.

Extension point: routers passed as ``extra_routers`` are mounted after the API's own routes;
``dashboard=True`` (the default) also mounts ``tether.dashboard.create_router(tether_app)`` when
the dashboard package is importable.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from contextlib import asynccontextmanager
from typing import Any
from collections.abc import AsyncIterator, Iterable

from fastapi import APIRouter, Depends, FastAPI

from .. import __version__
from ..app import Tether
from ..loader import app_at
from ..errors import ConfigurationError
from ..tracing import TraceContextMiddleware
from .stream_hub import StreamHub
from .wait_hub import WaitHub
from . import (
    background, openapi, problems, redact, routes_budgets, routes_callbacks, routes_flow,
    routes_jobs, routes_queues, routes_schedules, routes_signals, routes_spend, routes_streams,
    routes_system, routes_webhooks,
)
from .limits import DEFAULT_MAX_BODY_BYTES, BodyLimit
from .metrics import registry_for
from .nostore import NoStore
from .strict_query import known_query

log = logging.getLogger("tether.api")

API_PREFIX = "/api/v1"
INSECURE_WARNING = (
    "\n" + "!" * 78 + "\n"
    "!!  tether API AUTHENTICATION IS OFF (--insecure-no-auth): anyone who can reach this\n"
    "!!  port can read, submit and cancel every job of every project. Local use only.\n"
    + "!" * 78
)


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in background.TRUE


def create_app(tether_app: Tether, *, auth: bool = True,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               public_metrics: bool | None = None,
               extra_routers: Iterable[APIRouter] = (), dashboard: bool = True,
               run_worker: bool = False, worker_options: dict[str, Any] | None = None,
               close_on_shutdown: bool = False, max_waits_per_token: int | None = None,
               max_streams_per_token: int | None = None,
               stream_poll_s: float | None = None,
               stream_keepalive_s: float | None = None,
               stream_recheck_s: float | None = None) -> FastAPI:
    """The ASGI app serving ``tether_app``.

    ``auth=False`` makes every caller an unrestricted admin (logged loudly). ``public_metrics``
    (default ``TETHER_PUBLIC_METRICS``) serves ``/metrics`` without a token. ``run_worker``
    runs a worker for ``tether_app`` in a background thread for the app's lifetime.
    ``max_waits_per_token`` (default ``TETHER_MAX_WAITS_PER_TOKEN`` or 100) caps the
    ``?wait=`` requests one token may hold open; they wait on the live streams' hub.
    ``max_streams_per_token`` (``TETHER_MAX_STREAMS_PER_TOKEN`` or 20) caps the live event
    streams a token holds open; ``stream_poll_s`` (``TETHER_STREAM_POLL_S`` or 1) is how often
    streams and waits re-check without a wake-up, ``stream_keepalive_s``
    (``TETHER_STREAM_KEEPALIVE_S`` or 15) how often an idle stream sends a keep-alive comment
    (and a waiter re-reads its job), ``stream_recheck_s`` (``TETHER_STREAM_RECHECK_S`` or 5)
    how often open streams and waits re-check that their token is not revoked.
    """
    if not auth:
        log.warning(INSECURE_WARNING)
    worker_options = dict(worker_options or {})

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redact.install()  # after the server set its loggers up: no callback token is logged
        runner = None
        if run_worker:
            runner = background.BackgroundWorker(tether_app, **worker_options)
            runner.start()
        app.state.worker = runner
        try:
            yield
        finally:
            stream_hub.close()
            if runner is not None:
                runner.stop()
            if close_on_shutdown:
                tether_app.close()

    # No /docs or /redoc: FastAPI's pages load Swagger UI from a CDN, and the API must work
    # offline. /openapi.json is served; docs/api.md says how to browse it.
    app = FastAPI(title="tether", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None,
                  description="A durable job engine: submit, watch and control jobs. Errors are "
                              "RFC 9457 problem documents; authenticate with a bearer token.")
    app.state.tether = tether_app
    stream_hub = StreamHub(tether_app, max_per_token=max_streams_per_token,
                           poll_s=stream_poll_s, keepalive_s=stream_keepalive_s,
                           recheck_s=stream_recheck_s)
    hub = WaitHub(tether_app, streams=stream_hub, max_per_token=max_waits_per_token)
    app.state.waits = hub
    app.state.streams = stream_hub
    app.state.auth = auth
    app.state.public_metrics = (_truthy("TETHER_PUBLIC_METRICS") if public_metrics is None
                                else public_metrics)
    app.state.metrics = registry_for(tether_app)
    app.state.max_body_bytes = max_body_bytes
    problems.install(app)

    api = APIRouter(prefix=API_PREFIX, dependencies=[Depends(known_query)])
    api.include_router(routes_streams.router)
    api.include_router(routes_jobs.router)
    api.include_router(routes_signals.router)
    api.include_router(routes_callbacks.router)
    api.include_router(routes_queues.router)
    api.include_router(routes_flow.router)
    api.include_router(routes_schedules.router)
    api.include_router(routes_spend.router)
    api.include_router(routes_budgets.router)
    api.include_router(routes_webhooks.router)
    app.include_router(api)
    app.include_router(routes_system.router)
    app.include_router(routes_callbacks.public)
    app.include_router(routes_system.router, prefix=API_PREFIX, include_in_schema=False)
    for router in extra_routers:
        app.include_router(router)
    if dashboard:
        _mount_dashboard(app, tether_app)

    def custom_openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            app.openapi_schema = openapi.finish(schema, auth=auth)
        return app.openapi_schema

    app.openapi = custom_openapi  # type: ignore[method-assign]
    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes)
    app.add_middleware(NoStore)
    app.add_middleware(TraceContextMiddleware)  # a caller's traceparent parents its jobs
    return app


def _mount_dashboard(app: FastAPI, tether_app: Tether) -> None:
    try:
        from ..dashboard import create_router
    except ImportError:
        return
    app.include_router(create_router(tether_app, api_prefix=API_PREFIX))


def serve(app_spec: str | None = None, host: str = "127.0.0.1", port: int = 8000,
          database_url: str | None = None, insecure_no_auth: bool = False,
          run_worker: bool | None = None, *, max_body_bytes: int | None = None,
          worker_options: dict[str, Any] | None = None, log_level: str = "info") -> None:
    """Run the API with uvicorn until SIGINT/SIGTERM (what ``tether serve`` calls). SIGTERM
    drains: requests finish, the in-process worker hands its leases back, exit status 0.

    With ``app_spec`` (``module:attr``) submissions of unregistered job types are refused.
    ``run_worker`` (default: ``TETHER_RUN_WORKER``) also runs a worker for that app.
    ``max_body_bytes`` defaults to ``TETHER_MAX_BODY_BYTES`` or 1 MiB.
    """
    import uvicorn

    with_worker = background.wanted(run_worker)
    if with_worker and not app_spec:
        raise ConfigurationError("TETHER_RUN_WORKER needs --app MODULE:APP: a worker without "
                                 "job types would fail every job it claims")
    tether_app = app_at(app_spec, database_url, create_database=False)
    tether_app.store  # an existing tether database, or NoDatabase before serving  # noqa: B018
    if max_body_bytes is None:
        max_body_bytes = int(os.environ.get("TETHER_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))
    if insecure_no_auth and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("--insecure-no-auth on %s: this exposes every job to the network", host)
    app = create_app(tether_app, auth=not insecure_no_auth, max_body_bytes=max_body_bytes,
                     run_worker=with_worker, worker_options=worker_options,
                     close_on_shutdown=True)
    if threading.current_thread() is threading.main_thread():
        # uvicorn drains on SIGTERM, then re-raises it; a drained server exits 0
        signal.signal(signal.SIGTERM, _exit_zero)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _exit_zero(signum: int, frame: Any) -> None:
    raise SystemExit(0)
