"""``/api/v1/webhooks`` and ``/api/v1/deliveries`` over real HTTP on both backends:
subscribe (201, the secret once), list, get, delete; deliveries with their attempts; a
re-send (409 while pending); project scoping; a loopback target refused by a server that
does not allow it. The server runs no worker: the test runs the outbox step itself."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tether import Tether, WebhookSettings
from tests.procs import wait_until
from tests.e2e.api_harness import BACKENDS, backend_url, run_server

URL = "http://127.0.0.1:9/hook"


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("api-webhooks")
    url = backend_url(request.param, d)
    local = Tether(url, webhooks=WebhookSettings(allow_private=True))
    _, admin = local.store.create_token(name="admin", projects=[], admin=True)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    _, p2 = local.store.create_token(name="p2", projects=["p2"], admin=False)
    with run_server(url, d, env={"TETHER_WEBHOOK_ALLOW_PRIVATE": "1"}) as srv:
        with srv.client(admin) as a, srv.client(p1) as c1, srv.client(p2) as c2:
            yield SimpleNamespace(local=local, admin=a, p1=c1, p2=c2, dir=d, url=url)
    local.close()


def test_subscribe_list_get_delete_with_project_scope(api):
    r = api.p1.post("/api/v1/webhooks", json={"url": URL, "kinds": ["job.failed"],
                                               "description": "pager"})
    assert r.status_code == 201, r.text
    sub = r.json()
    assert sub["project"] == "p1" and sub["secret"].startswith("whsec_")
    assert r.headers["location"] == f"/api/v1/webhooks/{sub['id']}"
    every = api.admin.post("/api/v1/webhooks", json={"url": URL, "kinds": ["schedule.missed"]})
    assert every.status_code == 201 and every.json()["project"] is None

    mine = api.p1.get("/api/v1/webhooks").json()["items"]
    assert [s["id"] for s in mine] == [sub["id"]] and "secret" not in mine[0]
    assert {s["id"] for s in api.admin.get("/api/v1/webhooks").json()["items"]} >= {
        sub["id"], every.json()["id"]}
    assert api.p2.get(f"/api/v1/webhooks/{sub['id']}").status_code == 404
    assert api.p2.get("/api/v1/webhooks", params={"project": "p1"}).status_code == 403
    assert api.p1.post("/api/v1/webhooks", json={"url": URL, "kinds": ["job.failed"],
                                                  "project": "p2"}).status_code == 403
    bad = api.p1.post("/api/v1/webhooks", json={"url": URL, "kinds": ["job.exploded"]})
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"
    ftp = api.p1.post("/api/v1/webhooks", json={"url": "ftp://x.example/", "kinds": ["job.failed"]})
    assert ftp.status_code == 422 and ftp.json()["code"] == "invalid_argument"

    assert api.p2.delete(f"/api/v1/webhooks/{sub['id']}").status_code == 404
    gone = api.p1.delete(f"/api/v1/webhooks/{sub['id']}")
    assert gone.status_code == 200 and gone.json()["id"] == sub["id"]
    missing = api.p1.get(f"/api/v1/webhooks/{sub['id']}")
    assert missing.status_code == 404 and missing.json()["code"] == "webhook_not_found"


def test_deliveries_attempts_and_a_resend(api):
    sub = api.p1.post("/api/v1/webhooks", json={
        "url": URL, "kinds": ["budget.threshold_crossed"]}).json()
    job = api.local.submit("t", {}, project="p1")
    api.local.store.append_event(job.id, "budget_threshold", {"threshold": 0.5})
    assert wait_until(api.local.webhook_step, what="the outbox step") == 1
    (d,) = api.local.deliveries(webhook=sub["id"])
    api.local.store.record_webhook_attempt(d.id, d.job_id, status=500, error="the receiver "
                                           "answered 500", duration_ms=3.0)

    listed = api.p1.get("/api/v1/deliveries", params={"webhook": sub["id"]}).json()["items"]
    assert [x["id"] for x in listed] == [d.id] and listed[0]["state"] == "queued"
    assert api.p2.get("/api/v1/deliveries", params={"webhook": sub["id"]}).json()["items"] == []
    one = api.p1.get(f"/api/v1/deliveries/{d.id}").json()
    assert one["body"]["type"] == "budget.threshold_crossed"
    assert [(a["n"], a["status"]) for a in one["attempts"]] == [(1, 500)]
    assert api.p2.get(f"/api/v1/deliveries/{d.id}").status_code == 404

    busy = api.p1.post(f"/api/v1/deliveries/{d.id}/resend")
    assert busy.status_code == 409 and busy.json()["code"] == "invalid_transition"
    api.local.cancel(d.job_id)
    dead = api.p1.get("/api/v1/deliveries", params={"state": "cancelled"}).json()["items"]
    assert d.id in [x["id"] for x in dead]
    again = api.p1.post(f"/api/v1/deliveries/{d.id}/resend")
    assert again.status_code == 200 and again.json()["sends"] == 2
    assert again.json()["state"] == "queued"


def test_a_server_that_does_not_allow_loopback_refuses_it(api):
    _, admin = api.local.store.create_token(name="strict", projects=[], admin=True)
    (api.dir / "strict").mkdir(exist_ok=True)
    with run_server(api.url, api.dir / "strict", migrate=False,
                    env={"TETHER_WEBHOOK_ALLOW_PRIVATE": "0"}) as srv, srv.client(admin) as c:
        for url in (URL, "http://localhost:8080/x", "http://169.254.169.254/latest"):
            r = c.post("/api/v1/webhooks", json={"url": url, "kinds": ["job.failed"]})
            assert r.status_code == 422 and r.json()["code"] == "webhook_target_refused", r.text
