"""The live site the dashboard's browser tests drive: a real ``tether serve`` with a worker.

``site`` starts one server (a real uvicorn process started by the ``tether`` CLI,
``TETHER_RUN_WORKER=true``) per test module over a freshly seeded SQLite file; ``context`` gives
each test a fresh browser context, so nothing leaks between tests through the browser's storage,
and fails the test on any JavaScript error. Test modules import the fixtures they use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tether import Budget, Tether
from tests.conftest import CHROMIUM
from tests.procs import CHILD_PYTHONPATH, free_port, stop, wait_http, wait_started, wait_until

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "dashboard"
APP = "tests.e2e.test_dashboard_app:app"
WAIT_MS = 15_000

MARKS = [pytest.mark.slow, pytest.mark.usefixtures("needs_chromium")]


@dataclass
class Site:
    url: str
    tokens: dict[str, str]
    jobs: dict[str, int]
    app: Tether

    def api(self, token: str = "admin") -> httpx.Client:
        return httpx.Client(base_url=self.url + "/api/v1", timeout=10,
                            headers={"Authorization": f"Bearer {self.tokens[token]}"})

    def job(self, name: str | int) -> dict:
        """A job as the API shows it, by seed name or by id."""
        job_id = self.jobs[name] if isinstance(name, str) else name
        with self.api() as client:
            return client.get(f"/jobs/{job_id}").json()


def wait_for(predicate, what: str, timeout: float = 20.0):
    return wait_until(predicate, timeout=timeout, what=what)


def _seed(app: Tether) -> tuple[dict[str, str], dict[str, int]]:
    store = app.store
    tokens = {"admin": store.create_token(name="ops", projects=[], admin=True)[1],
              "alpha": store.create_token(name="alpha-team", projects=["alpha"], admin=False)[1]}
    jobs: dict[str, int] = {}

    def add(name: str, type: str, project: str, **options) -> None:
        jobs[name] = app.submit(type, options.pop("payload", {"text": name}), project=project,
                                idempotency_key=name, **options).id

    add("loop-alpha", "long_loop", "alpha", budget=Budget(max_cost_usd="1.00"))
    add("loop-beta", "long_loop", "beta")
    add("report-alpha", "write_report", "alpha",
        budget=Budget(max_cost_usd="0.50", max_calls=20, max_output_tokens=5000))
    add("report-capped", "write_report", "alpha", budget=Budget(max_calls=2))
    add("report-beta", "write_report", "beta")
    add("report-share", "write_report", "alpha", payload={"text": "report-alpha"},
        budget=Budget(max_cost_usd="0.0115"))
    add("fails-1", "always_fails", "alpha")
    add("fails-2", "always_fails", "alpha")
    add("gamma-fails", "always_fails", "gamma")
    for i in range(3):
        add(f"parked-{i}", "long_loop", "delta", queue="parked")
    app.pause_queue("parked")  # pausing needs a queue that exists (no worker runs yet)
    add("later", "long_loop", "gamma", queue="later", run_after=time.time() + 86_400)
    add("tiny-limit", "long_loop", "alpha", queue="tomorrow", run_after=time.time() + 86_400,
        budget=Budget(max_cost_usd="0.00001"))
    add("long-queue", "long_loop", "gamma", queue="nightly-batch-import-of-the-customer-archive-2026",
        run_after=time.time() + 86_400)
    return tokens, jobs


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("dashboard")
    url = f"sqlite:///{tmp}/tether.db"
    app = Tether(url)
    tokens, jobs = _seed(app)
    port = free_port()
    env = {**os.environ, "TETHER_DATABASE_URL": url, "TETHER_RUN_WORKER": "true",
           "TETHER_SIM_BILL": str(tmp / "bill.jsonl"), "TETHER_REVIEW_STEPS": "25",
           "TETHER_SIM_BATCH_DIR": str(tmp / "batches"),
           "TETHER_WEBHOOK_ALLOW_PRIVATE": "1",  # the webhooks page's receiver is on loopback
           "PYTHONPATH": CHILD_PYTHONPATH}
    tether_cli = Path(sys.executable).with_name("tether")
    log = tmp / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(tether_cli), "serve", "--app", APP, "--port", str(port),
                                 "--log-level", "warning"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    site = Site(f"http://127.0.0.1:{port}", tokens, jobs, app)
    try:
        wait_http(site.url + "/healthz", proc, log=log)
        wait_started(lambda: site.job("loop-alpha")["state"] == "running", proc,
                     what="loop-alpha to run", log=log)
        yield site
    finally:
        stop(proc, timeout=20)
        app.close()


@pytest.fixture(scope="module")
def browser():
    with playwright_sync.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser, site):
    ctx = browser.new_context(base_url=site.url, viewport={"width": 1400, "height": 900})
    ctx.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield ctx
    ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def signed_in(context, site: Site, who: str):
    context.add_init_script(
        f"if (location.origin === {json.dumps(site.url)}) "
        f"localStorage.setItem('tether.token', {json.dumps(site.tokens[who])});")
    return context.new_page()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(150)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def confirm(page) -> None:
    expect(page.locator("#confirm-dialog")).to_be_visible()
    page.click("#confirm-ok")
    expect(page.locator("#confirm-dialog")).to_be_hidden()
