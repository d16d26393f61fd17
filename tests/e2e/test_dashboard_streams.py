"""The dashboard follows the live event streams instead of polling (issue 23), in Chromium.

The page's clock is Playwright's fake one, so "no polling while the stream is open" is checked
by moving the page's time ten poll intervals forward and seeing no request at all; the events
themselves come from a ``stepped`` job that appends tick n when the test creates its file. The
polling endpoint (``GET /jobs/{id}/events``) is refused throughout, so whatever the page shows
after the first load came over the stream.
"""

from __future__ import annotations

import re

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, context, expect, shot, signed_in, site, wait_for)

pytestmark = MARKS

POLL_MS = 2000


def _api_requests(page) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if "/api/v1/" in r.url else None)
    return seen


def _stepped(site, folder, ticks: int) -> int:
    job_id = site.app.submit("stepped", {"dir": str(folder), "ticks": ticks},
                             project="alpha").id
    wait_for(lambda: site.job(job_id)["state"] == "running", "the stepped job to run")
    return job_id


def test_the_job_page_updates_from_its_stream_with_polling_off(context, site, tmp_path):
    job_id = _stepped(site, tmp_path, 3)
    page = signed_in(context, site, "alpha")
    requests = _api_requests(page)
    page.clock.install()
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#live-text")).to_have_text("Live · streaming")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")

    polled: list[str] = []

    def refuse(route):
        polled.append(route.request.url)
        route.abort()

    page.route(re.compile(rf".*/api/v1/jobs/{job_id}/events(\?.*)?$"), refuse)
    quiet = len(requests)
    page.clock.run_for(10 * POLL_MS)  # a polling page would have asked ten times by now
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    assert requests[quiet:] == []

    for n in (1, 2, 3):
        (tmp_path / f"tick-{n}").touch()
        expect(page.locator("#job-events .event[data-kind='tick']")).to_have_count(n)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "succeeded")
    expect(page.locator("#job-events .event[data-kind='succeeded']")).to_have_count(1)
    expect(page.locator("#live-text")).to_have_text("Finished · not updating")
    shot(page, "job-page-streamed")
    assert polled == []
    assert [u for u in requests if "/events/stream" in u] == [
        f"{site.url}/api/v1/jobs/{job_id}/events/stream"]
    logged = [e["seq"] for e in site.api("alpha").get(f"/jobs/{job_id}/events").json()["items"]]
    shown = page.eval_on_selector_all("#job-events .event", "els => els.map(e => +e.dataset.seq)")
    assert sorted(shown) == logged


def test_the_job_page_falls_back_to_polling_when_the_stream_fails(context, site, tmp_path):
    job_id = _stepped(site, tmp_path, 1)
    page = signed_in(context, site, "alpha")
    requests = _api_requests(page)
    page.route("**/events/stream*", lambda route: route.abort())
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")
    (tmp_path / "tick-1").touch()
    expect(page.locator("#job-events .event[data-kind='tick']")).to_have_count(1)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "succeeded")
    assert len([u for u in requests if u.endswith("/events/stream")]) == 3  # then it gave up
    assert len([u for u in requests if re.search(r"/events\?after=", u)]) >= 2  # polling


def test_the_jobs_list_redraws_from_the_event_stream_with_polling_off(context, site, tmp_path):
    page = signed_in(context, site, "alpha")
    requests = _api_requests(page)
    page.clock.install()
    page.goto("/jobs")
    expect(page.locator("#live-text")).to_have_text("Live · streaming")
    quiet = len(requests)
    page.clock.run_for(10 * POLL_MS)
    assert requests[quiet:] == []

    job_id = site.app.submit("stepped", {"dir": str(tmp_path), "ticks": 1}, project="alpha").id
    row = page.locator(f"#jobs-body tr[data-job-id='{job_id}']")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-state", "running")
    (tmp_path / "tick-1").touch()
    expect(row).to_have_attribute("data-state", "succeeded")
    assert [u for u in requests if "/events/stream" in u] == [f"{site.url}/api/v1/events/stream"]
