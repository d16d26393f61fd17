"""The REST API over real HTTP: idempotent submit, wait, pagination, events, control, budgets.

One uvicorn server (``python -m tether.api``) runs in a subprocess with a worker beside it
(``TETHER_RUN_WORKER=true``) for the job types in ``tests/e2e/api_app.py``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import httpx
import pytest

from tether import Tether
from tests.e2e.api_harness import run_server

APP = "tests.e2e.api_app:app"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-jobs")
    url = f"sqlite:///{d}/tether.db"
    local = Tether(url)
    _, admin = local.store.create_token(name="admin", projects=[], admin=True)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    with run_server(url, d, app_spec=APP, run_worker=True,
                    env={"TETHER_SIM_BILL": str(d / "bill.jsonl")}) as srv:
        with srv.client(admin) as a, srv.client(p1) as c:
            yield SimpleNamespace(srv=srv, local=local, admin=a, p1=c)
    local.close()


def wait_state(client: httpx.Client, job_id: int, states: set[str], timeout: float = 15) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["state"] in states or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


# --- idempotency -------------------------------------------------------------------------------

def test_same_key_same_body_returns_the_same_job_with_200(api):
    body = {"type": "echo", "payload": {"doc": 42}}
    first = api.p1.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": "doc-42"})
    again = api.p1.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": "doc-42"})
    assert first.status_code == 201, first.text
    assert first.headers["location"] == f"/api/v1/jobs/{first.json()['id']}"
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert first.json()["project"] == "p1" and first.json()["idempotency_key"] == "doc-42"


def test_same_key_other_body_is_422_idempotency_conflict(api):
    key = {"Idempotency-Key": "conflict-1"}
    first = api.p1.post("/api/v1/jobs", json={"type": "echo", "payload": {"v": 1}}, headers=key)
    other = api.p1.post("/api/v1/jobs", json={"type": "echo", "payload": {"v": 2}}, headers=key)
    prio = api.p1.post("/api/v1/jobs", json={"type": "echo", "payload": {"v": 1},
                                             "priority": 5}, headers=key)
    assert first.status_code == 201
    for r in (other, prio):
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"
        problem = r.json()
        assert problem["type"] == "urn:tether:problem:idempotency_conflict"
        assert problem["job_id"] == first.json()["id"]
    jobs = api.p1.get("/api/v1/jobs", params={"search": "conflict-1"}).json()["items"]
    assert [j["id"] for j in jobs] == [first.json()["id"]]


@pytest.mark.parametrize("key", ["", "has space", "x" * 201, "tab\tkey", "ключ"])
def test_malformed_idempotency_key_is_400(api, key):
    r = api.p1.post("/api/v1/jobs", json={"type": "echo"},
                    headers={"Idempotency-Key": key.encode("utf-8")})
    assert r.status_code == 400
    assert r.json()["code"] == "invalid_idempotency_key"


def test_a_key_is_scoped_to_its_project(api):
    body = {"type": "echo", "payload": 1}
    a = api.admin.post("/api/v1/jobs", json={**body, "project": "pa"},
                       headers={"Idempotency-Key": "shared"})
    b = api.admin.post("/api/v1/jobs", json={**body, "project": "pb"},
                       headers={"Idempotency-Key": "shared"})
    assert (a.status_code, b.status_code) == (201, 201)
    assert a.json()["id"] != b.json()["id"]


def test_twenty_concurrent_requests_with_one_key_create_exactly_one_job(api):
    body = {"type": "echo", "payload": {"race": True}}

    def post(_):
        with api.srv.client(api.p1.headers["authorization"].split()[1]) as c:
            return c.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": "race-20"})

    with ThreadPoolExecutor(20) as pool:
        responses = list(pool.map(post, range(20)))
    codes = sorted(r.status_code for r in responses)
    ids = {r.json()["id"] for r in responses if r.status_code in (200, 201)}
    assert codes.count(201) == 1, codes
    assert set(codes) <= {200, 201, 409}, codes
    assert len(ids) == 1
    listed = api.p1.get("/api/v1/jobs", params={"search": "race-20"}).json()["items"]
    assert len(listed) == 1 and listed[0]["id"] in ids


# --- wait, events, attempts, ledger ------------------------------------------------------------

def test_wait_returns_the_result_when_the_job_finishes(api):
    r = api.p1.post("/api/v1/jobs", params={"wait": 15},
                    json={"type": "echo", "payload": {"hello": "world"}})
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["state"] == "succeeded" and job["terminal"] is True
    assert job["result"] == {"echo": {"hello": "world"}}
    assert job["attempt_count"] == 1 and job["max_attempts"] == 3


def test_wait_answers_202_with_the_job_while_it_still_runs(api):
    t0 = time.monotonic()
    r = api.p1.post("/api/v1/jobs", params={"wait": 0.5},
                    json={"type": "steps", "payload": {"steps": 2000}})
    assert r.status_code == 202, r.text
    assert 0.4 < time.monotonic() - t0 < 10
    job = r.json()
    assert job["terminal"] is False and job["state"] in {"queued", "leased", "running"}
    api.p1.post(f"/api/v1/jobs/{job['id']}/cancel", json={"reason": "test done"})
    assert wait_state(api.p1, job["id"], {"cancelled"})["state"] == "cancelled"


def test_events_after_seq_and_attempts(api):
    job = api.p1.post("/api/v1/jobs", params={"wait": 15}, json={"type": "echo"}).json()
    assert job["state"] == "succeeded"
    everything = api.p1.get(f"/api/v1/jobs/{job['id']}/events").json()
    seqs = [e["seq"] for e in everything["items"]]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 3
    assert everything["items"][0]["kind"] == "submitted"
    assert everything["items"][-1]["to_state"] == "succeeded"
    assert everything["next_after"] == seqs[-1] and everything["has_more"] is False
    later = api.p1.get(f"/api/v1/jobs/{job['id']}/events", params={"after": 2}).json()
    assert [e["seq"] for e in later["items"]] == seqs[2:]
    paged = api.p1.get(f"/api/v1/jobs/{job['id']}/events", params={"limit": 1}).json()
    assert [e["seq"] for e in paged["items"]] == [1] and paged["has_more"] is True
    attempts = api.p1.get(f"/api/v1/jobs/{job['id']}/attempts").json()["items"]
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "succeeded")]


def test_ledger_and_cost_of_a_priced_job(api):
    job = api.p1.post("/api/v1/jobs", params={"wait": 20},
                      json={"type": "priced", "payload": {"prompt": "hello there"},
                            "budget": {"max_cost_usd": "1.00", "max_calls": 5}}).json()
    assert job["state"] == "succeeded", job
    rows = api.p1.get(f"/api/v1/jobs/{job['id']}/ledger").json()["items"]
    assert len(rows) == 1
    row = rows[0]
    assert (row["provider"], row["model"], row["confirmed"]) == ("simulated", "sim-small", True)
    assert isinstance(row["cost_usd"], str) and float(row["cost_usd"]) > 0
    assert job["actual_cost_usd"] == job["budget"]["used"]["spent_usd"]
    assert float(job["actual_cost_usd"]) == pytest.approx(float(row["cost_usd"]))
    assert job["budget"]["limits"]["max_cost_usd"] == "1"  # canonical: no trailing zeros
    assert job["budget"]["limits"]["max_calls"] == 5 and job["budget"]["used"]["calls"] == 1
    (cp,) = api.p1.get(f"/api/v1/jobs/{job['id']}/checkpoints").json()["items"]
    assert cp["stage"] == "prepare" and cp["position"] == 1 and len(cp["blob"]) == 64
    _, other = api.local.store.create_token(name="p2", projects=["p2"], admin=False)
    with api.srv.client(other) as p2:
        assert p2.get(f"/api/v1/jobs/{job['id']}/checkpoints").status_code == 404


# --- pagination --------------------------------------------------------------------------------

def test_cursor_pagination_walks_every_job_once_newest_first(api):
    made = [api.admin.post("/api/v1/jobs", json={"type": "echo", "project": "pages",
                                                 "payload": i}).json()["id"] for i in range(7)]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"project": "pages", "limit": 3, **({"cursor": cursor} if cursor else {})}
        page = api.admin.get("/api/v1/jobs", params=params).json()
        seen += [j["id"] for j in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == sorted(made, reverse=True)
    bad = api.admin.get("/api/v1/jobs", params={"cursor": "not-a-cursor"})
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "cursor"


def test_list_filters_by_state_and_type(api):
    job = api.p1.post("/api/v1/jobs", params={"wait": 15}, json={"type": "refuse"}).json()
    assert job["state"] == "failed" and job["error_code"] == "policy_block"
    assert job["error_summary"]
    failed = api.p1.get("/api/v1/jobs", params={"state": "failed", "type": "refuse"}).json()
    assert job["id"] in [j["id"] for j in failed["items"]]
    assert all(j["state"] == "failed" and j["type"] == "refuse" for j in failed["items"])


# --- control -----------------------------------------------------------------------------------

def test_pause_resume_cancel_through_a_paused_queue(api):
    assert api.admin.post("/api/v1/queues/held/pause").json()["paused"] is True
    job = api.p1.post("/api/v1/jobs", json={"type": "steps", "queue": "held",
                                            "payload": {"steps": 2000}}).json()
    path = f"/api/v1/jobs/{job['id']}"
    assert api.p1.post(f"{path}/pause").json()["state"] == "paused"
    again = api.p1.post(f"{path}/pause")
    assert again.status_code == 409 and again.json()["code"] == "invalid_transition"
    assert api.p1.post(f"{path}/resume").json()["state"] == "queued"
    assert api.admin.post("/api/v1/queues/held/resume").json()["paused"] is False
    running = wait_state(api.p1, job["id"], {"running"})
    assert running["state"] == "running"
    assert running["lease_owner"] and running["lease_expires_at"]
    cancelled = api.p1.post(f"{path}/cancel", json={"reason": "enough"})
    assert cancelled.json()["state"] in {"cancelling", "cancelled"}
    final = wait_state(api.p1, job["id"], {"cancelled"})
    assert final["state"] == "cancelled" and final["terminal"]
    kinds = [e["kind"] for e in api.p1.get(f"{path}/events").json()["items"]]
    assert kinds.index("pause") < kinds.index("resume") < kinds.index("cancel")


def test_retry_a_failed_job_and_refuse_an_invalid_transition(api):
    job = api.p1.post("/api/v1/jobs", params={"wait": 15}, json={"type": "refuse"}).json()
    assert job["state"] == "failed"
    retried = api.p1.post(f"/api/v1/jobs/{job['id']}/retry")
    assert retried.status_code == 200 and retried.json()["state"] in {
        "queued", "leased", "running", "failed"}
    done = api.p1.post("/api/v1/jobs", params={"wait": 15}, json={"type": "echo"}).json()
    r = api.p1.post(f"/api/v1/jobs/{done['id']}/cancel")
    assert r.status_code == 409
    assert r.json()["type"] == "urn:tether:problem:invalid_transition"
    r = api.p1.post(f"/api/v1/jobs/{done['id']}/requeue")
    assert r.status_code == 409


def test_patch_budget_changes_only_the_named_limits(api):
    assert api.admin.post("/api/v1/queues/held/pause").status_code == 200
    job = api.p1.post("/api/v1/jobs", json={"type": "echo", "queue": "held",
                                            "budget": {"max_calls": 3}}).json()
    r = api.p1.patch(f"/api/v1/jobs/{job['id']}/budget", json={"max_cost_usd": "2.5"})
    assert r.status_code == 200, r.text
    limits = r.json()["budget"]["limits"]
    assert limits["max_cost_usd"] == "2.5" and limits["max_calls"] == 3
    bad = api.p1.patch(f"/api/v1/jobs/{job['id']}/budget", json={"max_cost_usd": "-1"})
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "max_cost_usd"
    api.admin.post("/api/v1/queues/held/resume")


def test_unknown_job_type_is_rejected_with_app(api):
    r = api.p1.post("/api/v1/jobs", json={"type": "no_such_type"})
    assert r.status_code == 422
    assert r.json()["code"] == "unknown_job_type"
    assert api.p1.get("/api/v1/jobs", params={"type": "no_such_type"}).json()["items"] == []


def test_spend_metrics_light_up_from_the_ledger(api):
    job = api.p1.post("/api/v1/jobs", params={"wait": 20},
                      json={"type": "priced", "payload": {"prompt": "metrics please"}}).json()
    assert job["state"] == "succeeded"
    text = api.admin.get("/metrics").text
    labels = '{model="sim-small",provider="simulated"}'
    calls = next(ln for ln in text.splitlines()
                 if ln.startswith("tether_provider_calls_total" + labels))
    spend = next(ln for ln in text.splitlines()
                 if ln.startswith("tether_spend_usd_total" + labels))
    assert float(calls.split()[-1]) >= 1 and float(spend.split()[-1]) > 0
    assert 'tether_provider_tokens_total{direction="output",' in text


def test_the_in_process_worker_drains_when_the_server_stops(tmp_path):
    url = f"sqlite:///{tmp_path}/drain.db"
    local = Tether(url)
    try:
        with run_server(url, tmp_path, app_spec=APP, run_worker=True, insecure=True) as srv:
            with srv.client() as c:
                job = c.post("/api/v1/jobs", json={"type": "steps",
                                                   "payload": {"steps": 5000}}).json()
                assert wait_state(c, job["id"], {"running"})["state"] == "running"
                assert c.get("/api/v1/workers").json()["items"][0]["leases"] == 1
            srv.proc.terminate()
            assert srv.proc.wait(30) == 0
        after = local.get(job["id"])
        assert after.state == "queued" and after.lease_owner is None
        assert local.workers() == []
        kinds = [e.kind for e in local.events(job["id"])]
        assert kinds[-1] != "succeeded"
    finally:
        local.close()
