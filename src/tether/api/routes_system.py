"""``/healthz`` (no auth) and ``/metrics`` (Prometheus text; an admin token unless public).

Both are served at the root, where probes and scrapers look, and under ``/api/v1``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .. import __version__
from ..wire.principal import resolve
from .metrics import render
from .openapi import problem_responses
from ..wire.problems import Problem
from ..wire.models import Health

router = APIRouter(tags=["system"])

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/healthz", response_model=Health, responses=problem_responses(503),
            summary="Liveness and store reachability (no auth)")
def healthz(request: Request) -> Health:
    try:
        request.app.state.tether.ping()
    except Exception as exc:  # noqa: BLE001 - any store failure means unhealthy
        raise Problem(503, "store_unavailable", f"the store cannot be read: {exc}") from None
    return Health(status="ok", version=__version__)


@router.get("/metrics", response_class=Response, summary="Prometheus metrics",
            responses={200: {"content": {PROMETHEUS_TEXT: {"schema": {"type": "string"}}},
                             "description": "Prometheus text exposition"},
                       **problem_responses(401, 403)})
def metrics(request: Request) -> Response:
    state = request.app.state
    if state.auth and not state.public_metrics:
        token = resolve(state.tether.store, request.headers.get("authorization"))
        if not token.admin:
            raise Problem(403, "forbidden", "metrics need an admin token")
    return Response(render(state.metrics), media_type=PROMETHEUS_TEXT)
