"""The job page of a job paused by ``journal_mismatch`` (a real server, real Chromium): it
names the call, its stage and what changed, and its two buttons resume the job with each
decision through the REST API."""

from __future__ import annotations

import json

import pytest

from tests.e2e.api_harness import run_server
from tests.e2e.dashboard_site import MARKS, WAIT_MS, browser, confirm, expect  # noqa: F401
from tests.replaying import Deploy, paused_job

pytestmark = MARKS


@pytest.mark.parametrize("button, decision", [("#mismatch-reuse", "reuse"),
                                               ("#mismatch-repay", "repay")])
def test_the_job_page_shows_the_change_and_resumes_with_a_decision(browser, sqlite_url,
                                                                    tmp_path, button, decision):
    opened: list = []
    deploy = Deploy(sqlite_url, None, tmp_path / "bill.jsonl", opened)
    try:
        job, app = paused_job(deploy, model="sim-large")
        _, token = app.store.create_token(name="ops", projects=[], admin=True)
        with run_server(sqlite_url, tmp_path) as srv:
            ctx = browser.new_context(base_url=srv.url)
            ctx.set_default_timeout(WAIT_MS)
            errors: list[str] = []
            ctx.on("weberror", lambda e: errors.append(str(e.error)))
            ctx.add_init_script(f"if (location.origin === {json.dumps(srv.url)}) "
                                f"localStorage.setItem('tether.token', {json.dumps(token)});")
            page = ctx.new_page()
            page.goto(f"/jobs/{job.id}")
            box = page.locator("#job-mismatch")
            expect(box).to_be_visible()
            expect(page.locator("#mismatch-text")).to_contain_text("Call gen-1 in stage draft")
            expect(page.locator("#mismatch-differs")).to_have_text("model: sim-small → sim-large")
            page.click(button)
            confirm(page)
            expect(box).to_be_hidden()
            ctx.close()
            assert not errors, errors
        resumes = [e for e in app.events(job.id) if e.kind == "resume"]
        assert resumes[-1].data["on_change"] == decision
        assert app.get(job.id).state == "queued"
    finally:
        for a in opened:
            a.close()
