"""The dashboard's routes: page shells rendered with Jinja2, and the packaged static assets.

Every page is the same for every visitor; data arrives later through the REST API, called by
the browser with the visitor's own token. Nothing here reads jobs, so nothing here needs auth.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from ..core.states import TERMINAL, JobState
from .actions import allowed_actions

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
TEMPLATE_DIR = HERE / "templates"
ASSET_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": ("default-src 'self'; script-src 'self'; style-src 'self'; "
                                "img-src 'self' data:; connect-src 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
}


def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)),
                       autoescape=select_autoescape(["html"]), trim_blocks=True,
                       lstrip_blocks=True)


def _assets() -> dict[str, Path]:
    """Every packaged asset by its path under ``static/`` (``common.js``,
    ``vendor/uplot/uPlot.iife.min.js``): only these are served, so no request path can
    reach another file."""
    return {p.relative_to(STATIC_DIR).as_posix(): p for p in STATIC_DIR.rglob("*")
            if p.is_file() and p.suffix in ASSET_TYPES}


def create_router(tether_app: Any = None, *, api_prefix: str = "/api/v1",
                  poll_interval_ms: int = 2000) -> APIRouter:
    """A router serving the dashboard at ``/`` (sign-in, jobs, job, queues, schedules, webhooks,
    workers, spend pages)
    and its assets at ``/assets/``. ``api_prefix`` is where the browser finds the REST API;
    ``poll_interval_ms`` is how often open pages refresh. ``tether_app`` is accepted for
    symmetry with the API and is not read: the pages hold no data."""
    env = _environment()
    assets = _assets()
    config = {
        "api": api_prefix.rstrip("/"),
        "poll_ms": int(poll_interval_ms),
        "states": [str(s) for s in JobState],
        "terminal": sorted(str(s) for s in TERMINAL),
        "actions": allowed_actions(),
    }
    config_json = json.dumps(config, separators=(",", ":"))
    router = APIRouter(include_in_schema=False)

    def page(name: str, title: str, **extra: Any) -> HTMLResponse:
        html = env.get_template(f"{name}.html").render(
            page=name, title=title, config_json=config_json, **extra)
        return HTMLResponse(html, headers=PAGE_HEADERS)

    @router.get("/")
    def index() -> RedirectResponse:
        return RedirectResponse("/jobs", status_code=307)

    @router.get("/login")
    def login() -> HTMLResponse:
        return page("login", "Sign in")

    @router.get("/jobs")
    def jobs() -> HTMLResponse:
        return page("jobs", "Jobs")

    @router.get("/jobs/{job_id}")
    def job(job_id: int) -> HTMLResponse:
        return page("job", f"Job {job_id}", job_id=job_id)

    @router.get("/queues")
    def queues() -> HTMLResponse:
        return page("queues", "Queues")

    @router.get("/schedules")
    def schedules() -> HTMLResponse:
        return page("schedules", "Schedules")

    @router.get("/webhooks")
    def webhooks() -> HTMLResponse:
        return page("webhooks", "Webhooks")

    @router.get("/workers")
    def workers() -> HTMLResponse:
        return page("workers", "Workers")

    @router.get("/spend")
    def spend() -> HTMLResponse:
        return page("spend", "Spend")

    @router.get("/assets/{name:path}")
    def asset(name: str) -> FileResponse:
        path = assets.get(name)
        if path is None:
            raise HTTPException(status_code=404, detail="no such asset")
        return FileResponse(path, media_type=ASSET_TYPES[path.suffix],
                            headers={"Cache-Control": "no-cache"})

    return router
