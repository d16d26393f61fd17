"""Hostile and edge input over real HTTP, the same answer on both backends (issue 21, defects
3, 7, 8 and 14): NUL characters, bad names, deep JSON, raising a budget without resuming,
money rendering, caching headers, no CDN page, and pausing only queues that exist.

One server per backend with a worker for ``tests/e2e/api_app.py``.
"""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import pytest

from tether import Tether
from tests.e2e.api_harness import BACKENDS, backend_url, run_server

APP = "tests.e2e.api_app:app"
CANONICAL_MONEY = re.compile(r"^(0|[1-9]\d*)(\.\d*[1-9])?$")


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"api-inputs-{request.param}")
    url = backend_url(request.param, d)
    local = Tether(url)
    _, admin = local.store.create_token(name="admin", projects=[], admin=True)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    with run_server(url, d, app_spec=APP, run_worker=True,
                    env={"TETHER_SIM_BILL": str(d / "bill.jsonl")}) as srv:
        with srv.client(admin) as a, srv.client(p1) as c:
            yield SimpleNamespace(srv=srv, local=local, admin=a, p1=c, backend=request.param)
    local.close()


def problem(r, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["code"] == code and body["type"] == f"urn:tether:problem:{code}", body
    return body


def wait_for(client, job_id: int, states: set[str], timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["state"] in states or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


# --- defect 3: NUL ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["search", "type", "queue", "project"])
def test_a_nul_in_a_list_filter_is_422_invalid_argument(api, name):
    value = "a\x00b" if name != "project" else "p1\x00"
    body = problem(api.admin.get("/api/v1/jobs", params={name: value}), 422, "invalid_argument")
    assert "NUL" in body["detail"] and body["argument"] == name


def test_a_nul_in_a_cancel_reason_is_422_and_cancels_nothing(api):
    job = api.p1.post("/api/v1/jobs", json={"type": "held_steps", "payload": {"steps": 1}}).json()
    r = api.p1.post(f"/api/v1/jobs/{job['id']}/cancel", json={"reason": "why\x00not"})
    problem(r, 422, "invalid_argument")
    assert [e["kind"] for e in api.p1.get(f"/api/v1/jobs/{job['id']}/events").json()["items"]
            ].count("cancel") == 0


@pytest.mark.parametrize("payload", ["a\x00b", {"k": ["x", "\x00"]}, {"k\x00": 1}])
def test_a_payload_holding_nul_is_422_invalid_payload_and_nothing_is_stored(api, payload):
    before = len(api.local.list(project="p1", limit=500))
    r = api.p1.post("/api/v1/jobs", json={"type": "echo", "payload": payload})
    assert "NUL" in problem(r, 422, "invalid_payload")["detail"]
    assert len(api.local.list(project="p1", limit=500)) == before


def test_a_payload_holding_an_escaped_backslash_u0000_is_plain_text(api):
    r = api.p1.post("/api/v1/jobs?wait=20", json={"type": "echo", "payload": "\\u0000"})
    assert r.status_code == 201 and r.json()["result"] == {"echo": "\\u0000"}, r.text


# --- defect 7: names, keys, deep JSON -----------------------------------------------------------

def test_a_bad_queue_name_says_what_is_wrong_with_the_queue_name(api):
    body = problem(api.p1.post("/api/v1/jobs", json={"type": "echo", "queue": "a\nb"}),
                   422, "invalid_argument")
    assert body["detail"].startswith("queue name") and body["argument"] == "queue"


def test_a_malformed_idempotency_key_is_400_from_the_facades_own_check(api):
    r = api.p1.post("/api/v1/jobs", json={"type": "echo"}, headers={"Idempotency-Key": "a b"})
    assert "idempotency key" in problem(r, 400, "invalid_idempotency_key")["detail"]


def test_json_nested_too_deeply_is_422_invalid_payload(api):
    deep = '{"type": "echo", "payload": ' + "[" * 100_000 + "]" * 100_000 + "}"
    r = api.p1.post("/api/v1/jobs", content=deep.encode(),
                    headers={"content-type": "application/json"})
    problem(r, 422, "invalid_payload")


# --- defect 8: raise a budget without resuming -------------------------------------------------

def test_patch_budget_with_resume_false_raises_the_limit_and_leaves_the_job_paused(api):
    job = api.p1.post("/api/v1/jobs", json={"type": "priced", "payload": {}, "budget": {
        "max_cost_usd": "0.0000001"}}).json()
    paused = wait_for(api.p1, job["id"], {"paused"})
    assert paused["state"] == "paused" and paused["error_code"] == "budget_exhausted", paused
    path = f"/api/v1/jobs/{job['id']}/budget"
    r = api.p1.patch(path, json={"max_cost_usd": "1", "resume": False})
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "paused" and r.json()["budget"]["limits"]["max_cost_usd"] == "1"
    time.sleep(0.3)
    assert api.p1.get(f"/api/v1/jobs/{job['id']}").json()["state"] == "paused"
    problem(api.p1.patch(path, json={"resume": "no"}), 422, "validation_error")
    r = api.p1.patch(path, json={"max_calls": 5})  # resume defaults to true
    assert r.status_code == 200 and r.json()["state"] != "paused"
    done = wait_for(api.p1, job["id"], {"succeeded"})
    assert done["state"] == "succeeded", done


# --- defect 14 ---------------------------------------------------------------------------------

def _money_fields(job: dict) -> list[str]:
    used, limits = job["budget"]["used"], job["budget"]["limits"]
    return [v for v in (job["actual_cost_usd"], job["reserved_cost_usd"], used["spent_usd"],
                        used["reserved_usd"], limits["max_cost_usd"],
                        job["estimated_cost_usd"]) if v is not None]


def test_money_is_plain_fixed_point_without_trailing_zeros_on_both_backends(api):
    job = api.p1.post("/api/v1/jobs?wait=20", json={"type": "priced", "payload": {}, "budget": {
        "max_cost_usd": "2.50000"}}).json()
    assert job["state"] == "succeeded", job
    money = _money_fields(job)
    assert all(CANONICAL_MONEY.match(m) for m in money), money
    assert job["reserved_cost_usd"] == "0" and job["budget"]["limits"]["max_cost_usd"] == "2.5"
    (row,) = api.p1.get(f"/api/v1/jobs/{job['id']}/ledger").json()["items"]
    for name in ("cost_usd", "reserved_usd", "input_per_mtok", "output_per_mtok"):
        assert CANONICAL_MONEY.match(row[name]), (name, row[name])


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/jobs/999999", "/healthz",
                                  "/openapi.json", "/api/v1/nothing"])
def test_every_api_response_says_cache_control_no_store(api, path):
    assert api.p1.get(path).headers["cache-control"] == "no-store"


def test_a_refused_oversized_body_says_no_store_too(api):
    r = api.p1.post("/api/v1/jobs", content=b"x" * (2 * 1024 * 1024),
                    headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.headers["cache-control"] == "no-store"


def test_no_page_loads_assets_from_another_site(api):
    assert api.p1.get("/docs").status_code == 404
    assert api.p1.get("/redoc").status_code == 404
    assert api.p1.get("/openapi.json").status_code == 200


def test_only_queues_that_exist_or_are_declared_can_be_paused(api):
    problem(api.admin.post("/api/v1/queues/no-such-queue/pause"), 404, "queue_not_found")
    problem(api.admin.post("/api/v1/queues/no-such-queue/resume"), 404, "queue_not_found")
    names = {q["name"] for q in api.admin.get("/api/v1/queues").json()["items"]}
    assert "no-such-queue" not in names
    assert api.admin.post("/api/v1/queues/held/pause").json()["paused"] is True  # declared
    assert api.admin.post("/api/v1/queues/held/resume").json()["paused"] is False
    api.p1.post("/api/v1/jobs", json={"type": "echo", "queue": "adhoc"})
    assert api.admin.post("/api/v1/queues/adhoc/pause").json()["paused"] is True  # exists
    assert api.admin.post("/api/v1/queues/adhoc/resume").json()["paused"] is False
