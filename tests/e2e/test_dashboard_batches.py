"""A job's provider batches on its dashboard page, in Chromium against a live ``tether serve``
with a worker: after the job's wait ended (the batch settled by the worker's sweep, the job
finished), the page still lists each batch with its provider id, items done / failed / in
all, and its money at the batch price beside the standard price; a job without batches shows
no batch card."""

from __future__ import annotations

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, context, expect, shot, signed_in, site, wait_for)

pytestmark = MARKS


def test_a_finished_jobs_page_shows_its_settled_batch(context, site):
    job_id = site.app.submit("batched", {}, project="alpha").id
    wait_for(lambda: site.job(job_id)["state"] == "succeeded", f"job {job_id} to finish")
    with site.api() as client:
        (b,) = client.get(f"/jobs/{job_id}/batches").json()["items"]
    assert b["status"] == "settled" and b["settled_usd"] and b["standard_usd"]
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_text("succeeded")
    expect(page.locator("#waiting-card")).to_be_hidden()
    card = page.locator("#batches-card")
    expect(card).to_be_visible()
    cells = card.locator(f"tr[data-batch='{b['key']}'] td")
    expect(cells).to_have_text([b["key"], "simulated · sim-small", b["remote_id"], "settled",
                                "2", "0", "2", usd(page, b["reserved_usd"]),
                                usd(page, b["settled_usd"]), usd(page, b["standard_usd"])])
    expect(page.locator("#batches-total")).to_have_text(
        f"1 batch · {usd(page, b['settled_usd'])} instead of {usd(page, b['standard_usd'])}")
    shot(page, "job-settled-batch")


def test_a_job_without_batches_shows_no_batch_card(context, site):
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{site.jobs['fails-1']}")
    expect(page.locator("#job-state")).not_to_have_text("")
    expect(page.locator("#job-attempts")).to_be_visible()
    expect(page.locator("#batches-card")).to_be_hidden()


def usd(page, value: str) -> str:
    """``value`` as the page formats money."""
    return page.evaluate("v => window.tether.fmt.usd(v)", value)
