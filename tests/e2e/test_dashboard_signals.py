"""A job waiting for a person, in Chromium against a live ``tether serve`` with a worker: the
job page shows its prompt, schema and deadline with Approve / Reject and an optional value;
each button sends the signal (``{"approved": ..., "value": ...}``) and the job runs on with
it; the jobs page's "Waiting for me" filter lists only the jobs waiting for an answer."""

from __future__ import annotations

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, confirm, context, expect, shot, signed_in, site, wait_for)

pytestmark = MARKS


def waiting(site, project: str = "alpha", **payload) -> int:
    job_id = site.app.submit("approval", payload, project=project).id
    wait_for(lambda: site.job(job_id)["state"] == "waiting", f"job {job_id} to wait")
    return job_id


def test_approve_with_a_value_sends_the_signal_and_the_job_finishes(context, site):
    job_id = waiting(site, cost="42.00")
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{job_id}")
    card = page.locator("#waiting-card")
    expect(card).to_be_visible()
    expect(page.locator("#waiting-title")).to_have_text("Waiting for an answer")
    expect(page.locator("#waiting-prompt")).to_have_text("Approve plan for $42.00?")
    expect(page.locator("#waiting-signal")).to_have_text("approve")
    expect(page.locator("#waiting-schema")).to_contain_text('"approved"')
    expect(card).to_contain_text("then signal_timeout")
    shot(page, "job-waiting-for-approval")

    page.fill("#answer-value", '{"note": "ship it"}')
    page.click("#answer-approve")
    expect(page.locator("#confirm-text")).to_contain_text('"approved":true')
    confirm(page)
    wait_for(lambda: site.job(job_id)["state"] == "succeeded", "the approved job to finish")
    assert site.job(job_id)["result"] == {
        "answer": {"approved": True, "value": {"note": "ship it"}}}
    expect(page.locator("#job-state")).to_have_text("succeeded")
    expect(card).to_be_hidden()


def test_reject_with_text_sends_approved_false(context, site):
    job_id = waiting(site, cost="7.50")
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#waiting-prompt")).to_have_text("Approve plan for $7.50?")
    page.fill("#answer-value", "too expensive")
    page.click("#answer-reject")
    confirm(page)
    wait_for(lambda: site.job(job_id)["state"] == "succeeded", "the rejected job to finish")
    assert site.job(job_id)["result"] == {
        "answer": {"approved": False, "value": "too expensive"}}


def test_a_finished_job_refuses_a_late_answer_in_the_dialog(context, site):
    job_id = waiting(site)
    page = signed_in(context, site, "alpha")
    page.clock.install()  # no polling, and the stream is refused: the page cannot learn of
    page.route("**/events/stream*", lambda route: route.abort())  # the cancel below
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#waiting-prompt")).to_be_visible()
    site.app.cancel(job_id)
    page.click("#answer-approve")
    page.click("#confirm-ok")
    expect(page.locator("#confirm-error")).to_contain_text("takes no signals")
    page.click("#confirm-cancel")


def test_waiting_for_me_lists_only_the_jobs_waiting_for_an_answer(context, site):
    mine = waiting(site, cost="1.00")
    other = waiting(site, project="beta", cost="2.00")
    page = signed_in(context, site, "alpha")
    page.goto("/jobs")
    page.select_option("#f-waiting_for", "signal")
    expect(page.locator("#jobs-summary")).to_contain_text("waiting for an answer")
    rows = page.locator("#jobs-body tr[data-job-id]")
    expect(rows.first).to_have_attribute("data-state", "waiting")
    ids = {int(i) for i in rows.evaluate_all("rs => rs.map(r => r.dataset.jobId)")}
    assert mine in ids and other not in ids, "a project token sees its own projects only"
    states = set(rows.evaluate_all("rs => rs.map(r => r.dataset.state)"))
    assert states == {"waiting"}
    assert "waiting_for=signal" in page.url
    shot(page, "jobs-waiting-for-me")
    site.app.signal(mine, "approve", {"approved": False})
    wait_for(lambda: site.job(mine)["state"] == "succeeded", "the answered job to finish")
    expect(page.locator(f"#jobs-body tr[data-job-id='{mine}']")).to_have_count(0)
