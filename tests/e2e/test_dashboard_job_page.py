"""The job page's live view: it stops when there is nothing to watch, and its header never
contradicts its event log (issue 21, defect 10).

Polling runs on Playwright's fake clock, so "no request after the page gave up" is checked by
moving the page's time forward, not by waiting.
"""

from __future__ import annotations

import pytest

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, confirm, context, expect, signed_in, site, wait_for)

pytestmark = MARKS

POLL_MS = 2000


@pytest.mark.parametrize("whose", ["another project's", "a missing"])
def test_a_job_the_token_cannot_see_shows_not_found_and_stops_polling(context, site, whose):
    job_id = site.jobs["loop-beta"] if whose == "another project's" else 10**12
    page = signed_in(context, site, "alpha")
    api_requests: list[str] = []
    page.on("request", lambda r: api_requests.append(r.url) if "/api/v1/" in r.url else None)
    page.clock.install()
    page.goto(f"/jobs/{job_id}")

    expect(page.locator("#job-title")).to_have_text(f"Job #{job_id} not found")
    seen = len(api_requests)
    assert seen == 1, api_requests

    page.clock.run_for(10 * POLL_MS)
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    with page.expect_request("**/healthz"):
        page.evaluate("fetch('/healthz')")
    assert api_requests[seen:] == []

    expect(page.locator("#job-detail")).to_have_count(1)
    expect(page.locator("#job-detail")).to_be_hidden()
    expect(page.locator("#job-actions")).to_be_hidden()
    expect(page.locator("#live-text")).to_have_text("Not updating")


RECORD_AGREEMENT = """
window.__seen = [];
addEventListener("DOMContentLoaded", () => {
  const record = () => {
    const head = document.getElementById("job-state");
    const move = document.querySelector("#job-events .event-move");
    if (!head || !head.dataset.state || !move) return;
    const pair = [head.dataset.state, move.lastElementChild.dataset.state];
    const last = window.__seen[window.__seen.length - 1];
    if (!last || last[0] !== pair[0] || last[1] !== pair[1]) window.__seen.push(pair);
  };
  new MutationObserver(record).observe(document.body,
    { subtree: true, childList: true, attributes: true, characterData: true });
});
"""


@pytest.mark.parametrize("live", ["stream", "polling"])
def test_after_a_pause_the_header_and_the_events_tell_the_same_state(context, site, tmp_path,
                                                                     live):
    """Streaming, the job read after the pause request lands after the job paused while its
    ``paused`` event is still on its way; polling (the stream refused), the first events read
    after it lands after the job row was read. Either way the header waits for the log."""
    gate = tmp_path / "gate"
    job_id = site.app.submit("gated_loop", {"gate": str(gate)}, project="alpha").id
    wait_for(lambda: site.job(job_id)["state"] == "running", "the gated job to run")
    page = signed_in(context, site, "alpha")
    page.add_init_script(RECORD_AGREEMENT)
    requested = []

    def pause(route):
        response = route.fetch()
        requested.append(response.status)
        route.fulfill(response=response)

    def slow(route):
        # let the job reach its boundary and pause in between, as a slow network would
        if requested and not gate.exists():
            gate.touch()
            wait_for(lambda: site.job(job_id)["state"] == "paused", "the job to pause")
        route.continue_()

    page.route(f"**/api/v1/jobs/{job_id}/pause", pause)
    if live == "stream":
        page.route(f"**/api/v1/jobs/{job_id}", slow)
    else:
        page.route(f"**/api/v1/jobs/{job_id}/events*", slow)
        page.route("**/events/stream*", lambda route: route.abort())
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "running")

    page.click("#job-actions [data-action=pause]")
    confirm(page)
    expect(page.locator("#job-state")).to_have_attribute("data-state", "paused")
    expect(page.locator("#job-events .event[data-kind='paused']")).to_have_count(1)
    assert requested == [200] and gate.exists()
    seen = page.evaluate("window.__seen")
    assert seen[-1] == ["paused", "paused"]
    assert [pair for pair in seen if pair[0] != pair[1]] == [], seen
    with site.api("alpha") as client:
        assert client.post(f"/jobs/{job_id}/cancel").status_code == 200


def test_the_facts_name_a_jobs_singleton_or_debounce_key(context, site):
    later = "2099-01-01T00:00:00Z"
    with site.api() as api:
        single = api.post("/jobs", json={"type": "long_loop", "project": "alpha",
                                         "queue": "later", "run_after": later,
                                         "singleton": True, "flow_key": "cust-9"}).json()
        debounced = api.post("/jobs", json={"type": "long_loop", "project": "alpha",
                                            "queue": "later", "debounce_s": 60}).json()
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{single['id']}")
    facts = page.locator("#job-facts")
    expect(facts).to_contain_text("Singleton key")
    expect(facts).to_contain_text("cust-9")
    page.goto(f"/jobs/{debounced['id']}")
    expect(facts).to_contain_text("Debounce key")
    expect(facts).to_contain_text("the whole type")
