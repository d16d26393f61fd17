"""The dashboard's HTTP surface, in process: pages, assets, headers, and what the pages carry."""

from __future__ import annotations

import json
import tomllib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tether import Tether
from tether.api import create_app
from tether.core.states import OPERATOR_ACTIONS, JobState, operator_target
from tether.dashboard import create_router
from tether.errors import JobStateError

PAGES = ["/login", "/jobs", "/jobs/7", "/queues", "/schedules", "/webhooks", "/workers",
         "/spend"]
PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tether" / "dashboard"


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.assets: list[str] = []
        self.body: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("src", "href"):
            if attrs.get(key, "").startswith("/assets/"):
                self.assets.append(attrs[key])
        if tag == "body":
            self.body = attrs


@pytest.fixture
def tether_app(tmp_path):
    app = Tether(f"sqlite:///{tmp_path}/tether.db")
    yield app
    app.close()


@pytest.fixture
def client(tether_app):
    with TestClient(create_app(tether_app)) as c:
        yield c


def _parse(html: str) -> _Refs:
    refs = _Refs()
    refs.feed(html)
    return refs


def test_the_api_app_serves_the_dashboard_at_the_root(client):
    resp = client.get("/", follow_redirects=False)
    assert resp.status_code == 307 and resp.headers["location"] == "/jobs"
    for path in PAGES:
        resp = client.get(path)
        assert resp.status_code == 200, path
        assert resp.headers["content-type"].startswith("text/html")


def test_pages_are_public_but_carry_no_job_data(client, tether_app):
    job = tether_app.submit("secret_type", {"secret": "s3cr3t-payload"}, project="proj-zq9",
                            idempotency_key="secret-key")
    assert client.get("/api/v1/jobs").status_code == 401
    for path in [*PAGES, f"/jobs/{job.id}"]:
        html = client.get(path).text
        for secret in ("secret_type", "s3cr3t-payload", "proj-zq9", "secret-key"):
            assert secret not in html, (path, secret)


def test_every_asset_a_page_references_is_served_with_its_type(client):
    seen = set()
    for path in PAGES:
        seen.update(_parse(client.get(path).text).assets)
    assert {"/assets/dashboard.css", "/assets/common.js", "/assets/live.js", "/assets/jobs.js",
            "/assets/job.js", "/assets/queues.js", "/assets/schedules.js", "/assets/workers.js",
            "/assets/webhooks.js", "/assets/login.js", "/assets/spend.js", "/assets/vendor/uplot/uPlot.iife.min.js",
            "/assets/vendor/uplot/uPlot.min.css"} <= seen
    for asset in seen:
        resp = client.get(asset)
        assert resp.status_code == 200, asset
        kind = {"css": "text/css", "js": "text/javascript", "svg": "image/svg+xml"}[asset.rsplit(".", 1)[1]]
        assert resp.headers["content-type"].startswith(kind)


@pytest.mark.parametrize("path", ["/assets/nope.js", "/assets/..%2Frouter.py",
                                  "/assets/router.py", "/assets/%2e%2e%2f__init__.py",
                                  "/assets/vendor/uplot/LICENSE",
                                  "/assets/vendor/..%2F..%2Frouter.py"])
def test_only_packaged_assets_are_served(client, path):
    assert client.get(path).status_code == 404


def test_pages_forbid_inline_script_and_framing(client):
    resp = client.get("/jobs")
    csp = resp.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert resp.headers["x-frame-options"] == "DENY"
    assert resp.headers["cache-control"] == "no-store"
    assert not re.search(r"<script(?![^>]*\bsrc=)", resp.text), "inline script would be blocked"


def test_the_page_config_mirrors_the_state_machine(client):
    config = json.loads(_parse(client.get("/jobs").text).body["data-config"])
    assert config["api"] == "/api/v1"
    assert config["states"] == [str(s) for s in JobState]
    for action in OPERATOR_ACTIONS:
        allowed = []
        for state in JobState:
            try:
                operator_target(action, state)
            except JobStateError:
                continue
            allowed.append(str(state))
        assert config["actions"][action] == allowed
    assert config["actions"]["retry"] == ["failed"]
    assert config["actions"]["resume"] == ["paused"]


def test_dashboard_routes_stay_out_of_the_api_schema(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert not [p for p in paths
                if not p.startswith(("/api/v1", "/healthz", "/metrics", "/callbacks/"))]


def test_the_router_mounts_on_any_fastapi_app_with_its_own_api_prefix():
    app = FastAPI()
    app.include_router(create_router(None, api_prefix="/custom/api/", poll_interval_ms=750))
    with TestClient(app) as c:
        config = json.loads(_parse(c.get("/queues").text).body["data-config"])
    assert config["api"] == "/custom/api" and config["poll_ms"] == 750


def test_package_data_globs_cover_every_dashboard_file():
    """Every file of the dashboard's templates and assets (the vendored chart library and its
    licence included) matches a ``package-data`` glob of pyproject, as setuptools expands
    them (``*`` stays within one folder), so the wheel ships it."""
    root = PACKAGE.parent
    pyproject = tomllib.loads((root.parent.parent / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["tether"]
    shipped = {p for g in globs for p in root.glob(g) if p.is_file()}
    for folder in ("templates", "static"):
        files = [p for p in (PACKAGE / folder).rglob("*") if p.is_file()]
        assert files and not [p for p in files if p not in shipped], folder
    assert PACKAGE / "static" / "vendor" / "uplot" / "LICENSE" in shipped
