"""The dashboard in headless Chromium against a live ``tether serve`` with a worker beside it.

One server (a real uvicorn process started by the ``tether`` CLI, ``TETHER_RUN_WORKER=true``)
serves the whole module; each test gets a fresh browser context, so nothing leaks between tests
through the browser's storage. Every page is screenshotted to ``test-output/dashboard/``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tether import Budget, Tether

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("TETHER_CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "test-output" / "dashboard"
APP = "tests.e2e.test_dashboard_app:app"
WAIT_MS = 15_000

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}"),
]


@dataclass
class Site:
    url: str
    tokens: dict[str, str]
    jobs: dict[str, int]
    app: Tether

    def api(self, token: str = "admin") -> httpx.Client:
        return httpx.Client(base_url=self.url + "/api/v1", timeout=10,
                            headers={"Authorization": f"Bearer {self.tokens[token]}"})

    def job(self, name: str) -> dict:
        with self.api() as client:
            return client.get(f"/jobs/{self.jobs[name]}").json()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(predicate, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


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
    add("fails-1", "always_fails", "alpha")
    add("fails-2", "always_fails", "alpha")
    add("gamma-fails", "always_fails", "gamma")
    for i in range(3):
        add(f"parked-{i}", "long_loop", "delta", queue="parked")
    app.pause_queue("parked")  # pausing needs a queue that exists (no worker runs yet)
    add("later", "long_loop", "gamma", queue="later", run_after=time.time() + 86_400)
    return tokens, jobs


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("dashboard")
    url = f"sqlite:///{tmp}/tether.db"
    app = Tether(url)
    tokens, jobs = _seed(app)
    port = _free_port()
    env = {**os.environ, "TETHER_DATABASE_URL": url, "TETHER_RUN_WORKER": "true",
           "TETHER_SIM_BILL": str(tmp / "bill.jsonl"), "TETHER_REVIEW_STEPS": "25",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    tether_cli = Path(sys.executable).with_name("tether")
    log = tmp / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(tether_cli), "serve", "--app", APP, "--port", str(port),
                                 "--log-level", "warning"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    site = Site(f"http://127.0.0.1:{port}", tokens, jobs, app)
    try:
        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"tether serve exited:\n{log.read_text()}")
            try:
                return httpx.get(site.url + "/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False
        _wait_for(ready, "tether serve to answer /healthz")
        _wait_for(lambda: site.job("loop-alpha")["state"] == "running", "loop-alpha to run")
        yield site
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
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


def _signed_in(context, site: Site, who: str):
    context.add_init_script(
        f"if (location.origin === {json.dumps(site.url)}) "
        f"localStorage.setItem('tether.token', {json.dumps(site.tokens[who])});")
    return context.new_page()


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(150)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _confirm(page) -> None:
    expect(page.locator("#confirm-dialog")).to_be_visible()
    page.click("#confirm-ok")
    expect(page.locator("#confirm-dialog")).to_be_hidden()


# --- the operator's round trip ---------------------------------------------------------------

def test_sign_in_filter_open_a_job_then_pause_and_resume_it_live(context, site):
    page = context.new_page()
    page.goto("/jobs")
    expect(page).to_have_url(re.compile(r"/login\?next=%2Fjobs$"))
    _shot(page, "login")

    page.fill("#token", site.tokens["admin"])
    page.click("#sign-in")
    expect(page).to_have_url(re.compile(r"/jobs$"))
    expect(page.locator(f"#jobs-body tr[data-job-id='{site.jobs['gamma-fails']}']")).to_be_visible()
    _shot(page, "jobs-all")

    page.fill("#f-type", "long_loop")
    page.select_option("#f-state", "running")
    expect(page).to_have_url(re.compile(r"\?(?=.*type=long_loop)(?=.*state=running)"))
    rows = page.locator("#jobs-body tr[data-job-id]")
    expect(rows).to_have_count(2)
    ids = {int(r.get_attribute("data-job-id")) for r in rows.all()}
    assert ids == {site.jobs["loop-alpha"], site.jobs["loop-beta"]}
    assert {r.get_attribute("data-state") for r in rows.all()} == {"running"}
    _shot(page, "jobs-filtered")

    job_id = site.jobs["loop-alpha"]
    page.click(f"#jobs-body tr[data-job-id='{job_id}'] a")
    expect(page).to_have_url(re.compile(rf"/jobs/{job_id}$"))
    state = page.locator("#job-state")
    expect(state).to_have_attribute("data-state", "running")
    page.evaluate("window.__sameDocument = true")

    page.click("#job-actions [data-action=pause]")
    _confirm(page)
    expect(state).to_have_attribute("data-state", "paused")
    assert site.job("loop-alpha")["state"] == "paused"
    expect(page.locator("#job-actions [data-action=resume]")).to_be_enabled()
    expect(page.locator("#job-actions [data-action=pause]")).to_be_disabled()

    page.click("#job-actions [data-action=resume]")
    _confirm(page)
    expect(state).to_have_attribute("data-state", "running")
    expect(page.locator("#job-events .event[data-kind='resume']")).to_have_count(1)
    expect(page.locator("#job-events .event[data-kind='paused']")).to_have_count(1)
    assert page.evaluate("window.__sameDocument") is True, "the page reloaded"


def test_a_wrong_token_is_refused_at_sign_in(context):
    page = context.new_page()
    page.goto("/login")
    page.fill("#token", "tth_000000000000_not-a-real-token")
    page.click("#sign-in")
    expect(page.locator("#login-error")).to_contain_text("not accepted")
    expect(page).to_have_url(re.compile(r"/login$"))


def test_the_job_page_shows_budget_stages_ledger_and_raising_the_budget_resumes_it(context, site):
    _wait_for(lambda: site.job("report-capped")["state"] == "paused", "the capped report to pause")
    page = _signed_in(context, site, "alpha")
    page.goto(f"/jobs/{site.jobs['report-capped']}")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "paused")
    expect(page.locator("#job-error")).to_contain_text("budget_exhausted")
    expect(page.locator("#job-budget .budget[data-dim='calls']")).to_contain_text("2 spent")
    expect(page.locator("#job-stages .step[data-status='done']")).to_have_count(1)
    expect(page.locator("#job-ledger tbody tr")).to_have_count(2)

    page.click("#raise-budget")
    expect(page.locator("#confirm-text")).to_contain_text("resumes it")
    page.fill("#budget-max_calls", "10")
    _confirm(page)

    expect(page.locator("#job-state")).to_have_attribute("data-state", "succeeded")
    expect(page.locator("#job-stages .step[data-status='done']")).to_have_count(3)
    expect(page.locator("#checkpoints-body tr")).to_have_count(3)
    expect(page.locator("#job-ledger tbody tr")).to_have_count(4)
    expect(page.locator("#job-budget .budget[data-dim='calls']")).to_contain_text("of 10")
    expect(page.locator("#job-events .event[data-kind='budget_exhausted']")).to_have_count(1)
    job = site.job("report-capped")
    assert job["budget"]["limits"]["max_calls"] == 10 and job["budget"]["used"]["calls"] == 4
    assert page.locator("#job-actions [data-action=cancel]").is_disabled()
    _shot(page, "job")


# --- bulk actions ----------------------------------------------------------------------------

def test_bulk_cancel_of_a_projects_queued_jobs_names_the_count_first(context, site):
    page = _signed_in(context, site, "admin")
    page.goto("/jobs?project=delta&state=queued")
    expect(page.locator("#jobs-body tr[data-job-id]")).to_have_count(3)
    page.select_option("#bulk-action", "cancel")
    page.click("#bulk-go")
    expect(page.locator("#confirm-title")).to_have_text("Cancel 3 jobs?")
    expect(page.locator("#bulk-count")).to_have_text("all 3")
    _shot(page, "bulk-confirm")
    _confirm(page)
    expect(page.locator("#flash")).to_have_text("Cancelled 3 jobs.")
    expect(page.locator("#jobs-body tr.empty")).to_contain_text("No jobs match")
    assert {site.job(f"parked-{i}")["state"] for i in range(3)} == {"cancelled"}


def test_bulk_retry_touches_only_the_failed_jobs_of_the_filter(context, site):
    for name in ("fails-1", "fails-2", "gamma-fails"):
        _wait_for(lambda n=name: site.job(n)["state"] == "failed", f"{name} to fail")
    page = _signed_in(context, site, "admin")
    page.goto("/jobs?project=alpha")
    page.fill("#f-type", "always_fails")
    expect(page.locator("#jobs-body tr[data-job-id]")).to_have_count(2)
    page.select_option("#bulk-action", "retry")
    page.click("#bulk-go")
    expect(page.locator("#confirm-title")).to_have_text("Retry 2 jobs?")
    _confirm(page)
    expect(page.locator("#flash")).to_have_text("Retried 2 jobs.")
    with site.api() as client:
        def kinds(name: str) -> list[str]:
            events = client.get(f"/jobs/{site.jobs[name]}/events").json()["items"]
            return [e["kind"] for e in events]
        assert kinds("fails-1").count("retry") == 1
        assert kinds("fails-2").count("retry") == 1
        assert "retry" not in kinds("gamma-fails")


# --- queues and workers ----------------------------------------------------------------------

def test_queues_page_shows_depth_and_pauses_and_resumes_a_queue(context, site):
    page = _signed_in(context, site, "admin")
    page.goto("/queues")
    row = page.locator("#queues-body tr[data-queue='later']")
    expect(row).to_have_attribute("data-paused", "false")
    expect(row.locator("td[data-count='queued']")).to_have_text("1")
    expect(page.locator("#queues-body tr[data-queue='parked']")).to_have_attribute("data-paused", "true")

    row.locator("button[data-action='pause']").click()
    _confirm(page)
    expect(row).to_have_attribute("data-paused", "true")
    with site.api() as client:
        queues = {q["name"]: q for q in client.get("/queues").json()["items"]}
    assert queues["later"]["paused"] is True
    _shot(page, "queues")

    row.locator("button[data-action='resume']").click()
    _confirm(page)
    expect(row).to_have_attribute("data-paused", "false")


def test_workers_page_shows_the_live_worker_and_its_leases(context, site):
    _wait_for(lambda: site.job("loop-beta")["state"] == "running", "loop-beta to run")
    page = _signed_in(context, site, "admin")
    page.goto("/workers")
    row = page.locator("#workers-body tr[data-status='live']")
    expect(row).to_have_count(1)
    expect(row.locator(f"a[href='/jobs/{site.jobs['loop-beta']}']")).to_be_visible()
    _shot(page, "workers")


# --- scoping ---------------------------------------------------------------------------------

def test_a_project_token_sees_only_its_projects(context, site):
    page = _signed_in(context, site, "alpha")
    page.goto("/jobs")
    rows = page.locator("#jobs-body tr[data-job-id]")
    expect(rows.first).to_be_visible()
    with site.api("alpha") as client:
        visible = {j["id"] for j in client.get("/jobs", params={"limit": 500}).json()["items"]}
    expect(rows).to_have_count(len(visible))
    shown = {int(r.get_attribute("data-job-id")) for r in rows.all()}
    assert shown == visible
    assert site.jobs["loop-alpha"] in shown and site.jobs["loop-beta"] not in shown
    assert {c.inner_text() for c in page.locator("#jobs-body tr td:nth-child(4)").all()} == {"alpha"}

    page.fill("#f-project", "beta")
    expect(page.locator("#jobs-body tr.empty")).to_contain_text("may not read")

    page.goto(f"/jobs/{site.jobs['loop-beta']}")
    expect(page.locator("#job-title")).to_contain_text("not found")
    expect(page.locator("#job-actions [data-action=cancel]")).to_be_disabled()

    page.goto("/queues")
    expect(page.locator("#queues-notice")).to_contain_text("admin token")
    page.goto("/workers")
    expect(page.locator("#workers-notice")).to_contain_text("admin token")


def test_signing_out_forgets_the_token(context, site):
    page = context.new_page()
    page.goto("/login")
    page.fill("#token", site.tokens["alpha"])
    page.click("#sign-in")
    expect(page).to_have_url(re.compile(r"/jobs$"))
    page.click("#sign-out")
    expect(page).to_have_url(re.compile(r"/login$"))
    assert page.evaluate("localStorage.getItem('tether.token')") is None
    page.goto("/queues")
    expect(page).to_have_url(re.compile(r"/login\?next=%2Fqueues$"))
