"""Bearer tokens and project scoping over real HTTP, plus /healthz and /metrics."""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import pytest

from tether import Tether
from tests.e2e.api_harness import run_server


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-auth")
    url = f"sqlite:///{d}/tether.db"
    local = Tether(url)
    tokens = {}
    for name, projects, admin in (("admin", [], True), ("p1", ["p1"], False),
                                  ("p2", ["p2"], False), ("both", ["p1", "p2"], False),
                                  ("revoked", ["p1"], False)):
        info, raw = local.store.create_token(name=name, projects=projects, admin=admin)
        tokens[name] = raw
        if name == "revoked":
            local.store.revoke_token(info.id)
    # no worker and no --app: jobs stay queued, any type is accepted
    with run_server(url, d) as srv:
        clients = {name: srv.client(raw) for name, raw in tokens.items()}
        clients["anon"] = srv.client()
        job1 = clients["p1"].post("/api/v1/jobs", json={"type": "t", "payload": 1}).json()
        job2 = clients["p2"].post("/api/v1/jobs", json={"type": "t", "payload": 2}).json()
        yield SimpleNamespace(srv=srv, c=clients, job1=job1, job2=job2, tokens=tokens)
        for c in clients.values():
            c.close()
    local.close()


def test_a_project_token_submits_into_its_own_project(api):
    assert api.job1["project"] == "p1" and api.job2["project"] == "p2"


@pytest.mark.parametrize("who", ["anon", "revoked"])
def test_missing_or_revoked_token_is_401_problem(api, who):
    r = api.c[who].get("/api/v1/jobs")
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert r.headers["www-authenticate"].lower().startswith("bearer")
    assert r.json()["type"] == "urn:tether:problem:unauthorized"


@pytest.mark.parametrize("header", ["Bearer", "Basic abc", "Bearer nope", "tth_x"])
def test_malformed_or_unknown_credentials_are_401(api, header):
    r = httpx.get(f"{api.srv.url}/api/v1/jobs/{api.job1['id']}",
                  headers={"Authorization": header})
    assert r.status_code == 401


def test_another_projects_job_answers_404_everywhere(api):
    other = api.job2["id"]
    p1 = api.c["p1"]
    for method, path in (("GET", ""), ("GET", "/events"), ("GET", "/attempts"),
                         ("GET", "/ledger"), ("POST", "/cancel"), ("POST", "/pause"),
                         ("POST", "/resume"), ("POST", "/retry"), ("POST", "/requeue")):
        r = p1.request(method, f"/api/v1/jobs/{other}{path}")
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["code"] == "job_not_found"
    r = p1.patch(f"/api/v1/jobs/{other}/budget", json={"max_calls": 1})
    assert r.status_code == 404
    missing = p1.get("/api/v1/jobs/999999")
    assert missing.status_code == 404 and missing.json()["detail"] == \
        p1.get(f"/api/v1/jobs/{other}").json()["detail"].replace(str(other), "999999")
    assert api.c["p2"].get(f"/api/v1/jobs/{other}").json()["state"] == "queued"


def test_lists_show_only_the_tokens_projects(api):
    ids = lambda who, **q: {j["id"] for j in api.c[who].get("/api/v1/jobs", params=q).json()["items"]}  # noqa: E731
    assert api.job1["id"] in ids("p1") and api.job2["id"] not in ids("p1")
    assert {api.job1["id"], api.job2["id"]} <= ids("both") <= ids("admin")
    assert ids("p1", search=str(api.job2["id"])) == set()
    r = api.c["p1"].get("/api/v1/jobs", params={"project": "p2"})
    assert r.status_code == 403


def test_submit_into_a_project_outside_the_token_is_403(api):
    r = api.c["p1"].post("/api/v1/jobs", json={"type": "t", "project": "p2"})
    assert r.status_code == 403 and r.json()["code"] == "forbidden"


def test_a_token_with_several_projects_must_name_one(api):
    r = api.c["both"].post("/api/v1/jobs", json={"type": "t"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "project"
    ok = api.c["both"].post("/api/v1/jobs", json={"type": "t", "project": "p2"})
    assert ok.status_code == 201 and ok.json()["project"] == "p2"


@pytest.mark.parametrize("method,path", [
    ("GET", "/api/v1/queues"), ("POST", "/api/v1/queues/default/pause"),
    ("POST", "/api/v1/queues/default/resume"), ("GET", "/api/v1/workers"),
    ("GET", "/metrics")])
def test_admin_routes_are_403_for_project_tokens_and_open_to_admins(api, method, path):
    r = api.c["p1"].request(method, path)
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert api.c["anon"].request(method, path).status_code == 401
    assert api.c["admin"].request(method, path).status_code == 200


def test_queue_pause_is_visible_in_the_queue_list(api):
    admin = api.c["admin"]
    admin.post("/api/v1/queues/default/pause")
    queues = {q["name"]: q for q in admin.get("/api/v1/queues").json()["items"]}
    assert queues["default"]["paused"] is True and queues["default"]["counts"]["queued"] >= 2
    admin.post("/api/v1/queues/default/resume")
    queues = {q["name"]: q for q in admin.get("/api/v1/queues").json()["items"]}
    assert queues["default"]["paused"] is False


def test_healthz_needs_no_token(api):
    for path in ("/healthz", "/api/v1/healthz"):
        r = api.c["anon"].get(path)
        assert r.status_code == 200 and r.json()["status"] == "ok"


def test_metrics_report_jobs_by_queue_and_state(api):
    text = api.c["admin"].get("/metrics").text
    assert "# TYPE tether_jobs gauge" in text
    line = next(ln for ln in text.splitlines()
                if ln.startswith('tether_jobs{queue="default",state="queued"}'))
    assert float(line.split()[-1]) >= 2
    for name in ("tether_queue_paused", "tether_workers", "tether_budget_paused_jobs",
                 "tether_provider_calls_total", "tether_spend_usd_total"):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
