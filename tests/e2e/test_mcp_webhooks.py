"""The webhook tools through the SDK's client over stdio, on both backends: subscribe (the
secret once), list, delete; deliveries with their attempts; a re-send; the REST API's
project scoping and stable codes; a loopback target refused by a server that does not allow
it. No worker runs: the test runs the outbox step itself (on PostgreSQL it may first wait for
the feed's horizon: any transaction open on the server holds it back, up to 30 s)."""

from __future__ import annotations

import anyio
import pytest

from tether import Tether, WebhookSettings
from tests.e2e.mcp_harness import code, data, stdio
from tests.procs import wait_until

URL = "http://127.0.0.1:9/hook"
LOOPBACK_OK = {"TETHER_WEBHOOK_ALLOW_PRIVATE": "1"}


@pytest.fixture
def local(database_url):
    app = Tether(database_url, webhooks=WebhookSettings(allow_private=True))
    yield app
    app.close()


def test_subscribe_see_deliveries_resend_delete_over_mcp(database_url, local):
    _, token = local.store.create_token(name="agent", projects=["mine"], admin=False)

    async def session():
        async with stdio(database_url, token, env=LOOPBACK_OK) as client:
            sub = data(await client.call_tool("tether_create_webhook", {
                "url": URL, "kinds": ["budget.threshold_crossed"], "description": "pager"}))
            assert sub["project"] == "mine" and sub["secret"].startswith("whsec_")
            assert code(await client.call_tool("tether_create_webhook", {
                "url": URL, "kinds": ["job.failed"], "project": "theirs"})) == "forbidden"
            assert code(await client.call_tool("tether_create_webhook", {
                "url": URL, "kinds": ["job.nope"]})) == "validation_error"
            listed = data(await client.call_tool("tether_list_webhooks", {}))["items"]
            assert [s["id"] for s in listed] == [sub["id"]] and "secret" not in listed[0]

            job = local.submit("t", {}, project="mine")
            local.store.append_event(job.id, "budget_threshold", {"threshold": 0.9})
            assert wait_until(local.webhook_step, what="the outbox step") == 1
            rows = data(await client.call_tool("tether_list_deliveries",
                                               {"webhook": sub["id"]}))["items"]
            assert len(rows) == 1 and rows[0]["kind"] == "budget.threshold_crossed"
            one = data(await client.call_tool("tether_get_delivery",
                                              {"delivery": rows[0]["id"]}))
            assert one["attempts"] == [] and one["state"] == "queued"
            assert code(await client.call_tool("tether_resend_delivery",
                                               {"delivery": one["id"]})) == "invalid_transition"
            local.cancel(one["job_id"])
            again = data(await client.call_tool("tether_resend_delivery",
                                                {"delivery": one["id"]}))
            assert again["sends"] == 2 and again["id"] == one["id"]

            gone = data(await client.call_tool("tether_delete_webhook", {"webhook": sub["id"]}))
            assert gone["id"] == sub["id"]
            assert code(await client.call_tool("tether_delete_webhook",
                                               {"webhook": sub["id"]})) == "webhook_not_found"

    anyio.run(session)


def test_a_loopback_target_is_refused_by_default(database_url):
    async def session():
        async with stdio(database_url) as client:
            assert code(await client.call_tool("tether_create_webhook", {
                "url": URL, "kinds": ["job.failed"]})) == "webhook_target_refused"

    anyio.run(session)
