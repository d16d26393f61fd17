"""``/api/v1/schedules`` over real HTTP on both backends: create (201) and redefine (200),
list and get with next run times, pause, resume, delete; problem details for bad input; the
same project scoping as the jobs routes. The server runs no worker: the test runs the
scheduler step itself at chosen instants (``now=``), so ticks are exact."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

import pytest

from tether import Tether
from tests.e2e.api_harness import BACKENDS, backend_url, run_server

APP = "tests.e2e.api_app:app"


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("api-schedules")
    url = backend_url(request.param, d)
    local = Tether(url)
    _, admin = local.store.create_token(name="admin", projects=[], admin=True)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    _, p2 = local.store.create_token(name="p2", projects=["p2"], admin=False)
    with run_server(url, d, app_spec=APP) as srv:
        with srv.client(admin) as a, srv.client(p1) as c1, srv.client(p2) as c2:
            yield SimpleNamespace(srv=srv, local=local, admin=a, p1=c1, p2=c2)
    local.close()


def ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_create_redefine_get_list_pause_resume_delete(api):
    body = {"name": "nightly-eval", "cron": "0 3 * * *", "timezone": "Europe/Berlin",
            "type": "echo", "payload": {"suite": "full"}, "budget": {"max_cost_usd": "2.5"},
            "catch_up": "all"}
    r = api.p1.post("/api/v1/schedules", json=body)
    assert r.status_code == 201, r.text
    assert r.headers["location"] == "/api/v1/schedules/nightly-eval"
    s = r.json()
    assert (s["project"], s["timezone"], s["catch_up"], s["payload"], s["paused"]) == (
        "p1", "Europe/Berlin", "all", {"suite": "full"}, False)
    assert s["budget"]["max_cost_usd"] == "2.5"
    nxt = datetime.fromisoformat(s["next_run_at"])
    assert nxt.minute == 0 and nxt.hour in (1, 2)  # 03:00 Berlin, CEST or CET

    again = api.p1.post("/api/v1/schedules", json={**body, "payload": {"suite": "smoke"}})
    assert again.status_code == 200 and again.json()["payload"] == {"suite": "smoke"}
    assert again.json()["next_run_at"] == s["next_run_at"]

    got = api.p1.get("/api/v1/schedules/nightly-eval")
    assert got.status_code == 200 and got.json()["next_run_at"] == s["next_run_at"]
    listed = api.p1.get("/api/v1/schedules").json()["items"]
    assert [x["name"] for x in listed] == ["nightly-eval"]

    paused = api.p1.post("/api/v1/schedules/nightly-eval/pause").json()
    assert paused["paused"] is True and paused["next_run_at"] is None
    assert api.local.store.run_schedules(now=ts(s["next_run_at"]) + 1) == []
    resumed = api.p1.post("/api/v1/schedules/nightly-eval/resume").json()
    assert resumed["paused"] is False and resumed["next_run_at"] is not None

    gone = api.p1.delete("/api/v1/schedules/nightly-eval")
    assert gone.status_code == 200 and gone.json()["name"] == "nightly-eval"
    assert api.p1.get("/api/v1/schedules/nightly-eval").status_code == 404


def test_a_tick_enqueues_one_job_seen_through_the_jobs_routes(api):
    s = api.p1.post("/api/v1/schedules", json={"name": "tick", "cron": "*/5 * * * *",
                                               "type": "echo", "payload": {"n": 1}}).json()
    tick = ts(s["next_run_at"])
    made = api.local.store.run_schedules(now=tick) + api.local.store.run_schedules(now=tick)
    assert len(made) == 1
    key = made[0].idempotency_key
    assert key.startswith("schedule:tick:")
    jobs = api.p1.get("/api/v1/jobs", params={"search": key}).json()["items"]
    assert [(j["type"], j["payload"], j["project"]) for j in jobs] == [("echo", {"n": 1}, "p1")]
    after = api.p1.get("/api/v1/schedules/tick").json()
    assert ts(after["next_run_at"]) == tick + 300 and after["last_job_id"] == jobs[0]["id"]
    api.p1.delete("/api/v1/schedules/tick")


@pytest.mark.parametrize("change, code", [
    ({"cron": "0 3 * *"}, "invalid_argument"),
    ({"cron": "0 0 30 2 *"}, "invalid_argument"),
    ({"timezone": "Nowhere/City"}, "invalid_argument"),
    ({"name": "has space"}, "invalid_argument"),
    ({"catch_up": "sometimes"}, "validation_error"),
    ({"surprise": 1}, "validation_error"),
])
def test_bad_input_is_a_422_problem(api, change, code):
    body = {"name": "bad", "cron": "* * * * *", "type": "echo", **change}
    r = api.admin.post("/api/v1/schedules", json=body)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == code and r.json()["type"] == f"urn:tether:problem:{code}"
    assert api.admin.get("/api/v1/schedules/bad").status_code == 404


def test_project_tokens_see_and_act_on_their_own_schedules_only(api):
    assert api.p2.post("/api/v1/schedules", json={"name": "p2-only", "cron": "* * * * *",
                                                  "type": "echo"}).status_code == 201
    r = api.p1.post("/api/v1/schedules", json={"name": "x", "cron": "* * * * *",
                                               "type": "echo", "project": "p2"})
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    taken = api.p1.post("/api/v1/schedules", json={"name": "p2-only", "cron": "* * * * *",
                                                   "type": "echo"})
    assert taken.status_code == 422 and taken.json()["code"] == "invalid_argument"
    assert "p2-only" not in [s["name"] for s in api.p1.get("/api/v1/schedules").json()["items"]]
    for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/pause"), ("POST", "/resume")):
        r = api.p1.request(method, f"/api/v1/schedules/p2-only{path}")
        assert r.status_code == 404 and r.json()["code"] == "schedule_not_found", (method, path)
    assert api.p1.get("/api/v1/schedules", params={"project": "p2"}).status_code == 403
    assert "p2-only" in [s["name"] for s in api.admin.get("/api/v1/schedules").json()["items"]]
    assert api.p2.get("/api/v1/schedules/p2-only").json()["paused"] is False
    api.p2.delete("/api/v1/schedules/p2-only")


def test_no_token_is_401(api):
    import httpx
    r = httpx.get(f"{api.srv.url}/api/v1/schedules")
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
