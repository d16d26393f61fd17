"""Budget thresholds on the dashboard's job page: a budget's alerts and the thresholds its
calls crossed are shown (from the job's ``budget_threshold`` events), and the budget dialog
sets thresholds and a soft budget through ``PATCH /jobs/{id}/budget``. Real server, real
worker, real Chromium."""

from __future__ import annotations

from tether import Budget
from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, confirm, context, expect, shot, signed_in, site, wait_for)

pytestmark = MARKS


def test_the_job_page_shows_alerts_and_the_thresholds_crossed(context, site):
    job_id = site.app.submit("write_report", {"text": "thresholds"}, project="alpha",
                             budget=Budget(max_calls=4, thresholds=[0.5, 1], soft=True)).id
    wait_for(lambda: site.job(job_id)["state"] == "succeeded", "the soft-budget job to finish")
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#job-alerts")).to_have_text(
        "Alerts at 50%, 100% of each limit · soft: its limits never pause the job")
    crossings = page.locator("#job-crossings li.crossing")
    expect(crossings).to_have_count(2)
    expect(crossings.first).to_contain_text("50% of this job's calls limit reached: 2 of 4")
    expect(crossings.nth(1)).to_have_attribute("data-threshold", "1")
    shot(page, "job-thresholds")


def test_the_budget_dialog_sets_thresholds_and_a_soft_budget(context, site):
    job_id = site.app.submit("long_loop", {"text": "alerts"}, project="delta", queue="parked",
                             budget=Budget(max_calls=100)).id
    page = signed_in(context, site, "admin")
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "queued")
    page.click("#raise-budget")
    page.fill("#budget-thresholds", "50, 80%")
    page.check("#budget-soft")
    confirm(page)
    expect(page.locator("#job-alerts")).to_contain_text("Alerts at 50%, 80% of each limit")
    limits = site.job(job_id)["budget"]["limits"]
    assert limits["thresholds"] == [0.5, 0.8] and limits["soft"] is True
    page.click("#raise-budget")
    page.fill("#budget-thresholds", "0")
    page.click("#confirm-ok")
    expect(page.locator("#confirm-error")).to_contain_text(
        "percentages above 0")


def test_the_spend_page_lists_each_projects_crossed_thresholds(context, site):
    site.app.set_project_budget("watched", max_calls=4, soft=True, thresholds=[0.5, 2])
    job_id = site.app.submit("write_report", {"text": "watched"}, project="watched").id
    wait_for(lambda: site.job(job_id)["state"] == "succeeded", "the watched job to finish")
    page = signed_in(context, site, "admin")
    page.goto("/spend")
    row = page.locator("#alerts-body tr.crossing[data-project='watched']")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("50% of calls")
    expect(row).to_contain_text("(soft)")
    expect(row.locator("a")).to_have_attribute("href", f"/jobs/{job_id}")
    shot(page, "spend-alerts")
