"""The dashboard in headless Chromium against a live ``tether serve`` with a worker beside it.

One server (``dashboard_site``: a real ``tether serve`` process with a worker beside it)
serves the whole module; each test gets a fresh browser context, so nothing leaks between tests
through the browser's storage. Every page is screenshotted to ``test-output/dashboard/``.
"""

from __future__ import annotations

import re

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, confirm, context, expect, shot, signed_in, site, wait_for)

pytestmark = MARKS


# --- the operator's round trip ---------------------------------------------------------------

def test_sign_in_filter_open_a_job_then_pause_and_resume_it_live(context, site):
    page = context.new_page()
    page.goto("/jobs")
    expect(page).to_have_url(re.compile(r"/login\?next=%2Fjobs$"))
    shot(page, "login")

    page.fill("#token", site.tokens["admin"])
    page.click("#sign-in")
    expect(page).to_have_url(re.compile(r"/jobs$"))
    expect(page.locator(f"#jobs-body tr[data-job-id='{site.jobs['gamma-fails']}']")).to_be_visible()
    shot(page, "jobs-all")

    page.fill("#f-type", "long_loop")
    page.select_option("#f-state", "running")
    expect(page).to_have_url(re.compile(r"\?(?=.*type=long_loop)(?=.*state=running)"))
    rows = page.locator("#jobs-body tr[data-job-id]")
    expect(rows).to_have_count(2)
    ids = {int(r.get_attribute("data-job-id")) for r in rows.all()}
    assert ids == {site.jobs["loop-alpha"], site.jobs["loop-beta"]}
    assert {r.get_attribute("data-state") for r in rows.all()} == {"running"}
    shot(page, "jobs-filtered")

    job_id = site.jobs["loop-alpha"]
    page.click(f"#jobs-body tr[data-job-id='{job_id}'] a")
    expect(page).to_have_url(re.compile(rf"/jobs/{job_id}$"))
    state = page.locator("#job-state")
    expect(state).to_have_attribute("data-state", "running")
    page.evaluate("window.__sameDocument = true")

    page.click("#job-actions [data-action=pause]")
    confirm(page)
    expect(state).to_have_attribute("data-state", "paused")
    assert site.job("loop-alpha")["state"] == "paused"
    expect(page.locator("#job-actions [data-action=resume]")).to_be_enabled()
    expect(page.locator("#job-actions [data-action=pause]")).to_be_disabled()

    page.click("#job-actions [data-action=resume]")
    confirm(page)
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
    wait_for(lambda: site.job("report-capped")["state"] == "paused", "the capped report to pause")
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{site.jobs['report-capped']}")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "paused")
    expect(page.locator("#job-error")).to_contain_text("budget_exhausted")
    expect(page.locator("#job-budget .budget[data-dim='calls']")).to_contain_text("2 spent")
    expect(page.locator("#job-stages .step[data-status='done']")).to_have_count(1)
    expect(page.locator("#job-ledger tbody tr")).to_have_count(2)

    page.click("#raise-budget")
    expect(page.locator("#confirm-text")).to_contain_text("resumes it")
    page.fill("#budget-max_calls", "10")
    confirm(page)

    expect(page.locator("#job-state")).to_have_attribute("data-state", "succeeded")
    expect(page.locator("#job-stages .step[data-status='done']")).to_have_count(3)
    expect(page.locator("#checkpoints-body tr")).to_have_count(3)
    expect(page.locator("#job-ledger tbody tr")).to_have_count(4)
    expect(page.locator("#job-budget .budget[data-dim='calls']")).to_contain_text("of 10")
    expect(page.locator("#job-events .event[data-kind='budget_exhausted']")).to_have_count(1)
    job = site.job("report-capped")
    assert job["budget"]["limits"]["max_calls"] == 10 and job["budget"]["used"]["calls"] == 4
    assert page.locator("#job-actions [data-action=cancel]").is_disabled()
    shot(page, "job")


# --- bulk actions ----------------------------------------------------------------------------

def test_bulk_cancel_of_a_projects_queued_jobs_names_the_count_first(context, site):
    page = signed_in(context, site, "admin")
    page.goto("/jobs?project=delta&state=queued")
    expect(page.locator("#jobs-body tr[data-job-id]")).to_have_count(3)
    page.select_option("#bulk-action", "cancel")
    page.click("#bulk-go")
    expect(page.locator("#confirm-title")).to_have_text("Cancel 3 jobs?")
    expect(page.locator("#bulk-count")).to_have_text("all 3")
    shot(page, "bulk-confirm")
    confirm(page)
    expect(page.locator("#flash")).to_have_text("Cancelled 3 jobs.")
    expect(page.locator("#jobs-body tr.empty")).to_contain_text("No jobs match")
    assert {site.job(f"parked-{i}")["state"] for i in range(3)} == {"cancelled"}


def test_bulk_retry_touches_only_the_failed_jobs_of_the_filter(context, site):
    for name in ("fails-1", "fails-2", "gamma-fails"):
        wait_for(lambda n=name: site.job(n)["state"] == "failed", f"{name} to fail")
    page = signed_in(context, site, "admin")
    page.goto("/jobs?project=alpha")
    page.fill("#f-type", "always_fails")
    expect(page.locator("#jobs-body tr[data-job-id]")).to_have_count(2)
    page.select_option("#bulk-action", "retry")
    page.click("#bulk-go")
    expect(page.locator("#confirm-title")).to_have_text("Retry 2 jobs?")
    confirm(page)
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
    page = signed_in(context, site, "admin")
    page.goto("/queues")
    row = page.locator("#queues-body tr[data-queue='later']")
    expect(row).to_have_attribute("data-paused", "false")
    expect(row.locator("td[data-count='queued']")).to_have_text("1")
    expect(page.locator("#queues-body tr[data-queue='parked']")).to_have_attribute("data-paused", "true")

    row.locator("button[data-action='pause']").click()
    confirm(page)
    expect(row).to_have_attribute("data-paused", "true")
    with site.api() as client:
        queues = {q["name"]: q for q in client.get("/queues").json()["items"]}
    assert queues["later"]["paused"] is True
    shot(page, "queues")

    row.locator("button[data-action='resume']").click()
    confirm(page)
    expect(row).to_have_attribute("data-paused", "false")


def test_workers_page_shows_the_live_worker_and_its_leases(context, site):
    wait_for(lambda: site.job("loop-beta")["state"] == "running", "loop-beta to run")
    page = signed_in(context, site, "admin")
    page.goto("/workers")
    row = page.locator("#workers-body tr[data-status='live']")
    expect(row).to_have_count(1)
    expect(row.locator(f"a[href='/jobs/{site.jobs['loop-beta']}']")).to_be_visible()
    shot(page, "workers")


# --- scoping ---------------------------------------------------------------------------------

def test_a_project_token_sees_only_its_projects(context, site):
    page = signed_in(context, site, "alpha")
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
