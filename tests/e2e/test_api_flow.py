"""``/api/v1/types`` and ``/api/v1/limits`` over real HTTP, and their /metrics gauges: admin
only, a paused type and a limit seen by claims, running / limit per key."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tether import Tether
from tests.e2e.api_harness import run_server


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-flow")
    url = f"sqlite:///{d}/tether.db"
    local = Tether(url)
    tokens = {name: local.store.create_token(name=name, projects=projects, admin=admin)[1]
              for name, projects, admin in (("admin", [], True), ("p1", ["p1"], False))}
    with run_server(url, d) as srv:  # no worker and no --app: jobs stay queued
        clients = {name: srv.client(raw) for name, raw in tokens.items()}
        for customer in ("c1", "c1", "c2"):
            r = clients["p1"].post("/api/v1/jobs", json={"type": "summarize",
                                                         "payload": {"customer": customer}})
            assert r.status_code == 201, r.text
        yield SimpleNamespace(c=clients, local=local)
        for c in clients.values():
            c.close()
    local.close()


@pytest.mark.parametrize("method,path,body", [
    ("GET", "/api/v1/types", None), ("POST", "/api/v1/types/summarize/pause", None),
    ("POST", "/api/v1/types/summarize/resume", None), ("GET", "/api/v1/limits", None),
    ("PUT", "/api/v1/limits/queue/nightly", {"total": 4}),
    ("DELETE", "/api/v1/limits/queue/nightly", None)])
def test_flow_routes_are_admin_only(api, method, path, body):
    r = api.c["p1"].request(method, path, json=body)
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert api.c["admin"].request(method, path, json=body).status_code in (200, 204)


def test_a_paused_type_is_listed_paused_and_not_claimed(api):
    admin = api.c["admin"]
    r = admin.post("/api/v1/types/summarize/pause")
    assert r.status_code == 200 and r.json() == {"name": "summarize", "paused": True,
                                                 "counts": {"queued": 3}}
    assert {t["name"]: t["paused"] for t in admin.get("/api/v1/types").json()["items"]} == {
        "summarize": True}
    assert api.local.store.claim("w", queues=None, limit=9, lease_ttl=30) == []
    assert 'tether_type_paused{type="summarize"} 1.0' in admin.get("/metrics").text
    assert admin.post("/api/v1/types/summarize/resume").json()["paused"] is False
    r = admin.post("/api/v1/types/nope/pause")
    assert r.status_code == 422 and r.json()["code"] == "unknown_job_type"


def test_a_limit_is_set_enforced_shown_and_cleared(api):
    admin = api.c["admin"]
    r = admin.put("/api/v1/limits/type/summarize", json={"per_key": 1, "key": "customer"})
    assert r.status_code == 200 and r.json() == {"scope": "type", "name": "summarize",
                                                 "key": "customer", "per_key": 1,
                                                 "total": None}
    claimed = api.local.store.claim("w", queues=None, limit=9, lease_ttl=30)
    assert sorted(c.job.payload["customer"] for c in claimed) == ["c1", "c2"]
    body = admin.get("/api/v1/limits").json()
    assert [(u["key"], u["running"], u["limit"]) for u in body["usage"]] == [
        (None, 2, None), ("c1", 1, 1), ("c2", 1, 1)]
    text = admin.get("/metrics").text
    assert 'tether_flow_running{key="c1",name="summarize",scope="type"} 1.0' in text
    assert 'tether_flow_limit{key="c1",name="summarize",scope="type"} 1.0' in text
    bad = admin.put("/api/v1/limits/type/summarize", json={"key": "customer"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_argument"
    assert admin.put("/api/v1/limits/project/x", json={"total": 1}).status_code == 422
    assert admin.delete("/api/v1/limits/type/summarize").status_code == 204
    assert admin.get("/api/v1/limits").json() == {"items": [], "usage": []}
