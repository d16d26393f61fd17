"""Signals over real HTTP, on both backends: ``POST /jobs/{id}/signals/{name}``,
``GET /jobs/{id}/waits``, ``waiting_for`` on a waiting job and ``GET /jobs?waiting_for=signal``.

One API server per backend with a worker beside it (``TETHER_RUN_WORKER=true``) runs the job
types of ``tests/e2e/api_app.py``: "ask" waits for the signal "approve"; "fan_in" gathers
"ask" children.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import httpx
import pytest

from tether import Tether
from tests.e2e.api_harness import BACKENDS, backend_url, run_server

APP = "tests.e2e.api_app:app"


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"api-signals-{request.param}")
    url = backend_url(request.param, d)
    local = Tether(url)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    _, p2 = local.store.create_token(name="p2", projects=["p2"], admin=False)
    with run_server(url, d, app_spec=APP, run_worker=True) as srv:
        with srv.client(p1) as c1, srv.client(p2) as c2:
            yield SimpleNamespace(srv=srv, local=local, p1=c1, p2=c2)
    local.close()


def until(client: httpx.Client, job_id: int, check, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if check(job):
            return job
        assert time.monotonic() < deadline, f"job {job_id} stuck: {job}"
        time.sleep(0.05)


def submit(client: httpx.Client, type_: str, payload: dict) -> int:
    r = client.post("/api/v1/jobs", json={"type": type_, "payload": payload})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_a_waiting_job_shows_its_question_and_a_signal_answers_it(api):
    job_id = submit(api.p1, "ask", {"prompt": "Approve plan for $42?", "timeout": 600})
    job = until(api.p1, job_id, lambda j: j["state"] == "waiting")
    w = job["waiting_for"]
    assert (w["kind"], w["signal"], w["prompt"]) == ("signal", "approve",
                                                     "Approve plan for $42?")
    assert w["schema"] == {"type": "object", "properties": {"approved": {"type": "boolean"}}}
    assert w["wake_at"] is not None and w["children"] is None
    assert job["lease_owner"] is None

    listed = api.p1.get("/api/v1/jobs", params={"waiting_for": "signal"}).json()["items"]
    assert job_id in [j["id"] for j in listed]
    assert all(j["state"] == "waiting" for j in listed)
    assert api.p1.get("/api/v1/jobs", params={"waiting_for": "signal",
                                              "state": "queued"}).json()["items"] == []

    r = api.p1.post(f"/api/v1/jobs/{job_id}/signals/approve",
                    json={"value": {"approved": True, "value": "ship it"}})
    assert r.status_code == 200, r.text
    assert r.json()["id"] == job_id and r.json()["state"] in ("queued", "leased", "running",
                                                              "succeeded")
    done = until(api.p1, job_id, lambda j: j["terminal"])
    assert done["state"] == "succeeded"
    assert done["result"] == {"answer": {"approved": True, "value": "ship it"}}
    assert done["waiting_for"] is None

    waits = api.p1.get(f"/api/v1/jobs/{job_id}/waits").json()["items"]
    assert [(w["kind"], w["status"], w["outcome"]) for w in waits] == [
        ("signal", "done", "received")]
    assert waits[0]["prompt"] == "Approve plan for $42?"
    assert waits[0]["value"] == {"approved": True, "value": "ship it"}


def test_a_signal_without_a_body_is_null_and_one_sent_early_waits_in_the_mailbox(api):
    start = datetime.now(timezone.utc) + timedelta(seconds=1.5)
    r = api.p1.post("/api/v1/jobs", json={"type": "ask", "payload": {"timeout": 600},
                                          "run_after": start.isoformat()})
    job_id = r.json()["id"]
    r = api.p1.post(f"/api/v1/jobs/{job_id}/signals/approve")
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "queued", "sent before the job ran"
    done = until(api.p1, job_id, lambda j: j["terminal"])
    assert done["state"] == "succeeded" and done["result"] == {"answer": None}
    assert done["attempt_count"] == 1, "the mailbox answered the wait: no park, no replay"
    kinds = [e["kind"] for e in api.p1.get(f"/api/v1/jobs/{job_id}/events").json()["items"]]
    assert kinds.index("signal") < kinds.index("wait") and "waiting" not in kinds
    waits = api.p1.get(f"/api/v1/jobs/{job_id}/waits").json()["items"]
    assert [(w["status"], w["outcome"]) for w in waits] == [("done", "received")]


def test_a_finished_job_takes_no_signal_409(api):
    job_id = submit(api.p1, "echo", {})
    until(api.p1, job_id, lambda j: j["terminal"])
    r = api.p1.post(f"/api/v1/jobs/{job_id}/signals/approve", json={"value": 1})
    assert r.status_code == 409
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "invalid_transition"


def test_another_projects_job_is_404_and_untouched(api):
    job_id = submit(api.p1, "ask", {"timeout": 600})
    until(api.p1, job_id, lambda j: j["state"] == "waiting")
    for r in (api.p2.post(f"/api/v1/jobs/{job_id}/signals/approve", json={"value": 1}),
              api.p2.get(f"/api/v1/jobs/{job_id}/waits"),
              api.p1.post("/api/v1/jobs/999999999/signals/approve")):
        assert r.status_code == 404, r.text
        assert r.json()["code"] == "job_not_found"
    assert job_id not in [j["id"] for j in api.p2.get(
        "/api/v1/jobs", params={"waiting_for": "signal"}).json()["items"]]
    assert api.p1.get(f"/api/v1/jobs/{job_id}").json()["state"] == "waiting"
    api.p1.post(f"/api/v1/jobs/{job_id}/cancel")


@pytest.mark.parametrize("name,code", [("x" * 201, "validation_error"),
                                       ("bad%0Aname", "validation_error"),
                                       ("bad%C2%85name", "invalid_argument"),
                                       ("review%2Flegal", "invalid_argument"),
                                       ("review/legal", "invalid_argument"),
                                       ("%2E%2E", "invalid_argument")])
def test_a_bad_signal_name_is_422(api, name, code):
    job_id = submit(api.p1, "ask", {"timeout": 600})
    r = api.p1.post(f"/api/v1/jobs/{job_id}/signals/{name}", json={"value": 1})
    assert r.status_code == 422, r.text
    assert r.json()["code"] == code
    if code == "invalid_argument" and "%C2" not in name:  # names the rule, not "Not Found"
        assert "other than '/', and not '.' or '..'" in r.json()["detail"]
    api.p1.post(f"/api/v1/jobs/{job_id}/cancel")


def test_an_unknown_body_field_is_422(api):
    job_id = submit(api.p1, "ask", {"timeout": 600})
    r = api.p1.post(f"/api/v1/jobs/{job_id}/signals/approve", json={"valu": 1})
    assert r.status_code == 422 and r.json()["code"] == "validation_error"
    api.p1.post(f"/api/v1/jobs/{job_id}/cancel")


def test_a_gathering_job_shows_its_children_done(api):
    parent = submit(api.p1, "fan_in", {"children": 2})
    job = until(api.p1, parent, lambda j: j["state"] == "waiting"
                and (j["waiting_for"] or {}).get("kind") == "children")
    assert (job["waiting_for"]["children"], job["waiting_for"]["children_done"]) == (2, 0)
    kids = sorted([j for j in api.local.list(project="p1", type="ask", limit=500)
                   if j.parent_id == parent], key=lambda j: j.id)
    assert len(kids) == 2
    for kid in kids:
        until(api.p1, kid.id, lambda j: j["state"] == "waiting")
    api.p1.post(f"/api/v1/jobs/{kids[0].id}/signals/approve", json={"value": "a"})
    job = until(api.p1, parent, lambda j: (j["waiting_for"] or {}).get("children_done") == 1)
    assert job["state"] == "waiting"
    api.p1.post(f"/api/v1/jobs/{kids[1].id}/signals/approve", json={"value": "b"})
    done = until(api.p1, parent, lambda j: j["terminal"])
    assert done["result"] == {"answers": [{"answer": "a"}, {"answer": "b"}]}


def test_a_job_waiting_on_a_provider_batch_shows_it(api):
    job_id = submit(api.p1, "batch", {})
    job = until(api.p1, job_id, lambda j: j["state"] == "waiting")
    w = job["waiting_for"]
    assert w["kind"] == "provider_batch" and w["key"] == "batch:b"
    b = w["batch"]
    assert b["provider"] == "simulated" and b["remote_id"].startswith("simbatch_")
    assert (b["items_total"], b["items_done"], b["items_failed"]) == (2, 0, 0)
    r = api.p1.get(f"/api/v1/jobs/{job_id}/batches")
    assert r.status_code == 200, r.text
    (item,) = r.json()["items"]
    assert item["status"] == "submitted" and item["reserved_usd"] == b["reserved_usd"]
    assert float(item["reserved_usd"]) > 0 and item["settled_usd"] is None
    assert api.p2.get(f"/api/v1/jobs/{job_id}/batches").status_code == 404
    listed = api.p1.get("/api/v1/jobs", params={"waiting_for": "provider_batch"}).json()
    assert job_id in [j["id"] for j in listed["items"]]
    assert api.p1.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 200
