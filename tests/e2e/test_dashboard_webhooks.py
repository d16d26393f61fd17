"""The webhooks page in headless Chromium against a live ``tether serve`` whose worker
delivers to a real receiver process on loopback (the site allows loopback targets): add a
subscription (its secret shown once), watch a failure's delivery arrive, open its attempts,
re-send it (the receiver gets the same webhook-id again), delete the subscription."""

from __future__ import annotations

import json

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, confirm, context, expect, shot, signed_in, site, wait_for)
from tests.integration.test_webhook_delivery import received, start_receiver
from tests.procs import free_port

pytestmark = MARKS


def test_add_a_webhook_watch_its_delivery_resend_it_and_delete_it(context, site, tmp_path):
    port, log = free_port(), tmp_path / "received.jsonl"
    receiver = start_receiver(port, log, out=tmp_path / "receiver.log")
    try:
        page = signed_in(context, site, "admin")
        page.goto("/webhooks")
        page.fill("#wh-url", f"http://127.0.0.1:{port}/hook")
        page.fill("#wh-project", "alpha")
        page.fill("#wh-description", "pager")
        page.click("#webhook-add")
        expect(page.locator("#webhook-secret")).to_contain_text("whsec_")
        row = page.locator("#webhooks-body tr[data-webhook]")
        expect(row).to_have_count(1)
        sub_id = row.get_attribute("data-webhook")
        with site.api() as client:
            assert client.get(f"/webhooks/{sub_id}").json()["kinds"] == ["job.failed"]

        job = site.app.submit("always_fails", {"message": "for the webhook"}, project="alpha")
        delivery = page.locator("#deliveries-body tr[data-delivery]")
        expect(delivery.locator("[data-state='succeeded']")).to_have_count(1)
        delivery_id = delivery.get_attribute("data-delivery")
        (first,) = received(log)
        assert first["headers"]["webhook-id"] == delivery_id
        assert json.loads(first["body"])["data"]["job"]["id"] == job.id
        delivery.locator("[data-action='attempts']").click()
        expect(page.locator(f"tr[data-attempts-of='{delivery_id}'] li[data-status='200']"))\
            .to_have_count(1)
        shot(page, "webhooks")

        delivery.locator("[data-action='resend']").click()
        confirm(page)
        wait_for(lambda: len(received(log)) == 2, "the re-sent delivery to arrive")
        assert {r["headers"]["webhook-id"] for r in received(log)} == {delivery_id}
        expect(page.locator(f"tr[data-attempts-of='{delivery_id}'] li[data-status='200']"))\
            .to_have_count(2)

        row.locator("[data-action='delete']").click()
        confirm(page)
        expect(page.locator("#webhooks-body tr[data-webhook]")).to_have_count(0)
        expect(page.locator(f"#deliveries-body tr[data-delivery='{delivery_id}']")).to_have_count(1)
    finally:
        receiver.kill()
        receiver.wait()


def test_a_project_token_sees_only_its_projects_webhooks(context, site):
    with site.api() as client:
        mine = client.post("/webhooks", json={"url": "http://127.0.0.1:9/a", "kinds": [
            "job.failed"], "project": "alpha"}).json()
        theirs = client.post("/webhooks", json={"url": "http://127.0.0.1:9/g", "kinds": [
            "job.failed"], "project": "gamma"}).json()
    page = signed_in(context, site, "alpha")
    page.goto("/webhooks")
    expect(page.locator(f"#webhooks-body tr[data-webhook='{mine['id']}']")).to_have_count(1)
    expect(page.locator(f"#webhooks-body tr[data-webhook='{theirs['id']}']")).to_have_count(0)
