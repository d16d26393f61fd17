"""Callback links from the dashboard, in Chromium against a live ``tether serve`` with a
worker: a waiting job's page lists its callback links (state, expiry, who made them, never
the URL) and makes one, shown once; opened without signing in, the link shows the question
with Approve / Reject (spending nothing), its form answers the job once, and a second visit
is told the link was used."""

from __future__ import annotations

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, context, expect, shot, signed_in, site, wait_for)

pytestmark = MARKS


def test_a_link_made_on_the_job_page_answers_the_job_once_without_signing_in(context, site):
    job_id = site.app.submit("approval", {"cost": "12.00"}, project="alpha").id
    wait_for(lambda: site.job(job_id)["state"] == "waiting", f"job {job_id} to wait")
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#callbacks")).to_be_visible()
    expect(page.locator("#callbacks-none")).to_be_visible()
    page.click("#callback-make")
    expect(page.locator("#callback-made")).to_be_visible()
    url = page.locator("#callback-url").input_value()
    assert url.startswith(f"{site.url}/callbacks/{job_id}/approve/tcb_"), url
    item = page.locator("#callback-list li")
    expect(item).to_have_count(1)
    expect(item).to_have_attribute("data-state", "unused")
    expect(item).to_contain_text("made by token:")
    shot(page, "job-waiting-callback-link")

    page.reload()
    expect(page.locator("#callback-list li")).to_have_count(1)
    expect(page.locator("#callback-made")).to_be_hidden()
    assert url.rsplit("/", 1)[1] not in page.content(), "the URL is shown once only"

    stranger = context.browser.new_context()  # no token: the link is the credential
    try:
        link = stranger.new_page()
        link.goto(url)
        expect(link.locator("h1")).to_have_text(f"Job {job_id} asks")
        expect(link.locator(".prompt")).to_have_text("Approve plan for $12.00?")
        assert site.job(job_id)["state"] == "waiting", "opening the link spends nothing"
        link.fill("#value", "looks fine")
        link.click("button[value=true]")
        expect(link.locator("h1")).to_have_text("Thank you")
        wait_for(lambda: site.job(job_id)["state"] == "succeeded", "the answered job to end")
        assert site.job(job_id)["result"] == {
            "answer": {"approved": True, "value": "looks fine"}}
        link.goto(url)
        expect(link.locator("h1")).to_have_text("Already answered")
    finally:
        stranger.close()
    page.reload()
    expect(page.locator("#job-state")).to_have_text("succeeded")
    expect(page.locator("#waiting-card")).to_be_hidden()
