"""Fork and retry from a stage over REST: a real uvicorn server with a worker beside it runs
the five-stage pipeline of ``tests/apps/forks.py``; the simulated provider's bill is the
ground truth for which calls were made."""

from __future__ import annotations

import time
from collections import Counter
from types import SimpleNamespace

import httpx
import pytest

from tether import Tether
from tether.providers.simulated import read_bill
from tests.e2e.api_harness import run_server

APP = "tests.apps.forks:app"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-forks")
    url = f"sqlite:///{d}/tether.db"
    local = Tether(url)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    _, p2 = local.store.create_token(name="p2", projects=["p2"], admin=False)
    with run_server(url, d, app_spec=APP, run_worker=True,
                    env={"TETHER_SIM_BILL": str(d / "bill.jsonl")}) as srv:
        with srv.client(p1) as c1, srv.client(p2) as c2:
            yield SimpleNamespace(srv=srv, local=local, p1=c1, p2=c2, bill=d / "bill.jsonl",
                                  dir=d)
    local.close()


def finished(client: httpx.Client, job_id: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled") or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def submit(api, payload: dict) -> dict:
    made = api.p1.post("/api/v1/jobs", json={"type": "five_stages", "payload": payload})
    assert made.status_code == 201, made.text
    return finished(api.p1, made.json()["id"])


def test_fork_answers_201_with_the_new_job_and_its_ledger_shows_the_reused_calls(api):
    src = submit(api, {"topic": "moons", "prompt": "short"})
    assert src["state"] == "succeeded"
    resp = api.p1.post(f"/api/v1/jobs/{src['id']}/fork", json={
        "from_stage": "review", "payload": {"topic": "moons", "prompt": "long"},
        "budget": {"max_calls": 9}})
    assert resp.status_code == 201, resp.text
    fork = resp.json()
    assert resp.headers["location"] == f"/api/v1/jobs/{fork['id']}"
    assert fork["project"] == "p1" and fork["type"] == "five_stages"
    assert fork["budget"]["limits"]["max_calls"] == 9
    assert finished(api.p1, fork["id"])["state"] == "succeeded"

    billed = Counter(e.key.split("-")[0] for e in read_bill(api.bill) if e.job_id == fork["id"])
    assert billed == {"review": 2, "export": 2}
    ledger = api.p1.get(f"/api/v1/jobs/{fork['id']}/ledger").json()["items"]
    reused = [r for r in ledger if r["reused_from"] is not None]
    assert len(reused) == 6 and {r["reused_from"] for r in reused} == {src["id"]}
    assert all(r["cost_usd"] == "0" and float(r["reused_cost_usd"]) > 0 for r in reused)
    assert [r["reused_from"] for r in ledger].count(None) == 4
    cps = api.p1.get(f"/api/v1/jobs/{fork['id']}/checkpoints").json()["items"]
    assert [(c["stage"], c["reused_from"]) for c in cps] == [
        ("draft", src["id"]), ("outline", src["id"]), ("validate", src["id"]),
        ("review", None), ("export", None)]
    events = api.p1.get(f"/api/v1/jobs/{src['id']}/events").json()["items"]
    assert {"job_id": fork["id"], "from_stage": "review"} in [
        e["data"] for e in events if e["kind"] == "forked_to"]


def test_fork_refusals_are_problem_documents(api):
    src = submit(api, {"topic": "a", "prompt": "b"})
    url = f"/api/v1/jobs/{src['id']}/fork"
    unknown = api.p1.post(url, json={"from_stage": "nope"})
    assert unknown.status_code == 422
    assert unknown.headers["content-type"].startswith("application/problem+json")
    assert unknown.json()["code"] == "invalid_argument" and "nope" in unknown.json()["detail"]
    assert api.p1.post(url, json={}).json()["code"] == "validation_error"
    assert api.p1.post(url, json={"from_stage": "draft", "x": 1}).status_code == 422
    other = api.p2.post(url, json={"from_stage": "draft"})
    assert other.status_code == 404 and other.json()["code"] == "job_not_found"
    missing = api.p1.post("/api/v1/jobs/999999/fork", json={"from_stage": "draft"})
    assert missing.status_code == 404


def test_retry_from_a_stage_over_rest(api):
    gate = api.dir / "review-ok"
    job = submit(api, {"topic": "a", "prompt": "b", "review_needs": str(gate)})
    assert job["state"] == "failed" and job["error_code"] == "policy_block"
    url = f"/api/v1/jobs/{job['id']}/retry"
    bad = api.p1.post(url, json={"from_stage": "export"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_argument"
    gate.write_text("ok")
    again = api.p1.post(url, json={"from_stage": "validate"})
    assert again.status_code == 200, again.text
    assert finished(api.p1, job["id"])["state"] == "succeeded"
    billed = Counter(e.key.split("-")[0] for e in read_bill(api.bill) if e.job_id == job["id"])
    assert billed == {"draft": 2, "outline": 2, "validate": 4, "review": 4, "export": 2}
    twice = api.p1.post(url)  # no body: the plain retry, refused for a job that is not failed
    assert twice.status_code == 409 and twice.json()["code"] == "invalid_transition"


def test_a_fork_request_retried_with_its_idempotency_key_makes_one_fork(api):
    src = submit(api, {"topic": "tides", "prompt": "short"})
    url = f"/api/v1/jobs/{src['id']}/fork"
    body = {"from_stage": "review", "payload": {"topic": "tides", "prompt": "long"}}
    first = api.p1.post(url, json=body, headers={"Idempotency-Key": "fork-a"})
    assert first.status_code == 201, first.text
    again = api.p1.post(url, json=body, headers={"Idempotency-Key": "fork-a"})
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"] and "location" not in again.headers
    forked_to = [e for e in api.local.events(src["id"]) if e.kind == "forked_to"]
    assert [e.data["job_id"] for e in forked_to] == [first.json()["id"]]

    other = api.p1.post(url, json={**body, "from_stage": "export"},
                        headers={"Idempotency-Key": "fork-a"})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_conflict"
    bad = api.p1.post(url, json=body, headers={"Idempotency-Key": "no spaces"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_idempotency_key"
    assert finished(api.p1, first.json()["id"])["state"] == "succeeded"
