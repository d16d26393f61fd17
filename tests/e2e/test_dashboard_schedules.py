"""The schedules page in headless Chromium against a live ``tether serve`` (with a worker, whose
scheduler runs): it lists name, cron, zone, next run and status, and pauses, resumes and
deletes a schedule through confirmations, each change visible through the API.

The schedules tick at 03:00 (Berlin) and at midnight on 1 January, far from the test's run, so
the worker's scheduler leaves them alone while the page is driven."""

from __future__ import annotations

from datetime import datetime

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, confirm, context, expect, shot, signed_in, site)

pytestmark = MARKS


def schedule(site, name):
    with site.api() as client:
        return client.get(f"/schedules/{name}")


def test_schedules_page_lists_next_runs_and_pauses_resumes_and_deletes(context, site):
    nightly = site.app.schedule("nightly-eval", cron="0 3 * * *", timezone="Europe/Berlin",
                                type="write_report", payload={"text": "eval"}, project="alpha")
    site.app.schedule("new-year", cron="0 0 1 1 *", type="long_loop", project="beta")
    page = signed_in(context, site, "admin")
    page.goto("/schedules")
    row = page.locator("#schedules-body tr[data-schedule='nightly-eval']")
    expect(row).to_have_attribute("data-paused", "false")
    expect(row.locator("td[data-field='cron']")).to_have_text("0 3 * * *")
    expect(row.locator("td[data-field='timezone']")).to_have_text("Europe/Berlin")
    shown = row.locator("td[data-field='next-run'] time")
    expect(shown).to_have_attribute("datetime", nightly.next_run_at.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    expect(page.locator("#schedules-body tr")).to_have_count(2)
    shot(page, "schedules")

    row.locator("button[data-action='pause']").click()
    confirm(page)
    expect(row).to_have_attribute("data-paused", "true")
    expect(row.locator("td[data-field='next-run']")).to_have_text("paused")
    assert schedule(site, "nightly-eval").json()["paused"] is True

    row.locator("button[data-action='resume']").click()
    confirm(page)
    expect(row).to_have_attribute("data-paused", "false")
    resumed = schedule(site, "nightly-eval").json()
    assert resumed["paused"] is False
    assert datetime.fromisoformat(resumed["next_run_at"]) == nightly.next_run_at

    row.locator("button[data-action='delete']").click()
    confirm(page)
    expect(row).to_have_count(0)
    assert schedule(site, "nightly-eval").status_code == 404
    expect(page.locator("#schedules-body tr[data-schedule='new-year']")).to_have_count(1)


def test_a_project_token_sees_only_its_projects_schedules(context, site):
    site.app.schedule("alpha-only", cron="0 3 * * *", type="write_report", project="alpha")
    site.app.schedule("gamma-only", cron="0 3 * * *", type="write_report", project="gamma")
    page = signed_in(context, site, "alpha")
    page.goto("/schedules")
    expect(page.locator("#schedules-body tr[data-schedule='alpha-only']")).to_have_count(1)
    expect(page.locator("#schedules-body tr[data-schedule='gamma-only']")).to_have_count(0)
