"""The dashboard says when a queued job's type has no live worker to serve it: the job page
explains, the jobs list marks the row, the workers page lists each worker's types."""

from __future__ import annotations

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, context, expect, signed_in, site)

pytestmark = MARKS


def test_a_job_no_worker_serves_is_marked_on_its_page_and_in_the_list(context, site):
    job = site.app.submit("nosuch_type", {}, project="alpha")
    served = site.jobs["loop-alpha"]
    page = signed_in(context, site, "admin")

    page.goto(f"/jobs/{job.id}")
    expect(page.locator("#job-unserved")).to_be_visible()
    expect(page.locator("#job-unserved")).to_contain_text(
        "No live worker serves type nosuch_type on queue default")

    page.goto(f"/jobs/{served}")
    expect(page.locator("#job-title")).to_contain_text(f"Job #{served}")
    expect(page.locator("#job-unserved")).to_be_hidden()

    page.goto("/jobs?project=alpha")
    expect(page.locator(f'tr[data-job-id="{job.id}"] .unserved')).to_have_text("no worker")
    expect(page.locator(f'tr[data-job-id="{served}"]')).to_be_visible()
    expect(page.locator(f'tr[data-job-id="{served}"] .unserved')).to_have_count(0)

    page.goto("/workers")
    expect(page.locator(".worker-types").first).to_contain_text("long_loop")


def test_the_job_page_shows_the_version_and_which_version_no_worker_serves(context, site):
    if "drafter" not in site.app.registry:
        site.app.register("drafter", lambda ctx, payload: None, version="3")
    job = site.app.submit("drafter", {}, project="alpha")
    page = signed_in(context, site, "admin")
    page.goto(f"/jobs/{job.id}")
    expect(page.locator("#job-unserved")).to_contain_text(
        "No live worker serves type drafter version 3 on queue default")
    expect(page.locator("#job-facts")).to_contain_text("Version3")

    page.goto("/jobs?project=alpha")
    row = page.locator(f'tr[data-job-id="{job.id}"]')
    expect(row.locator(".type-version")).to_have_text("version 3")
    expect(row.locator(".unserved")).to_have_attribute(
        "title", "No live worker serves type drafter version 3 on queue default")
    expect(page.locator(f'tr[data-job-id="{site.jobs["loop-alpha"]}"] .type-version')
           ).to_have_count(0)
