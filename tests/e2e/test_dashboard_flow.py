"""The dashboard's flow control in headless Chromium against a live ``tether serve`` with a
worker: the queues page lists job types, pauses and resumes one (the jobs list marks its jobs
"type paused"), and shows a concurrency limit's running / limit per key."""

from __future__ import annotations

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, confirm, context, expect, shot, signed_in, site)

pytestmark = MARKS


def test_queues_page_pauses_a_type_and_the_jobs_list_marks_its_jobs(context, site):
    page = signed_in(context, site, "admin")
    page.goto("/queues")
    row = page.locator("#types-body tr[data-type='long_loop']")
    expect(row).to_have_attribute("data-paused", "false")
    row.locator("button[data-action='pause']").click()
    confirm(page)
    expect(row).to_have_attribute("data-paused", "true")
    with site.api() as client:
        types = {t["name"]: t for t in client.get("/types").json()["items"]}
    assert types["long_loop"]["paused"] is True
    shot(page, "queues-types")
    page.goto("/jobs?queue=later")
    expect(page.locator(f"#jobs-body tr[data-job-id='{site.jobs['later']}'] .type-paused")
           ).to_have_text("type paused")
    page.goto("/queues")
    row.locator("button[data-action='resume']").click()
    confirm(page)
    expect(row).to_have_attribute("data-paused", "false")


def test_queues_page_shows_running_over_limit_per_key(context, site):
    site.app.set_flow_limit("type", "long_loop", per_key=3, total=5)
    try:
        page = signed_in(context, site, "admin")
        page.goto("/queues")
        rows = page.locator("#limits-body tr[data-scope='type'][data-name='long_loop']")
        # loop-alpha runs for minutes: project alpha holds one slot of its three
        expect(rows.and_(page.locator("[data-key='alpha']")).locator("td[data-usage]")
               ).to_have_text("1 / 3")
        expect(rows.and_(page.locator("[data-key='']")).locator("td[data-usage]")
               ).to_contain_text(" / 5")
        shot(page, "queues-limits")
    finally:
        site.app.clear_flow_limit("type", "long_loop")
