"""Errors over real HTTP: 413 body limit, 422 naming the field, problem+json everywhere,
the OpenAPI document, and the insecure local mode."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tether import Tether
from tests.e2e.api_harness import run_server

LIMIT = 4096


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-errors")
    url = f"sqlite:///{d}/tether.db"
    local = Tether(url)
    _, token = local.store.create_token(name="p", projects=["p"], admin=False)
    with run_server(url, d, max_body_bytes=LIMIT) as srv, srv.client(token) as c:
        yield SimpleNamespace(srv=srv, c=c, local=local)
    local.close()


def assert_problem(r, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"] == f"urn:tether:problem:{code}" and body["code"] == code
    assert body["status"] == status and body["title"] and body["detail"]
    return body


def test_a_body_over_the_limit_is_413(api):
    big = {"type": "t", "payload": "x" * (LIMIT + 10)}
    body = assert_problem(api.c.post("/api/v1/jobs", json=big), 413, "payload_too_large")
    assert body["limit"] == LIMIT
    assert api.local.list(project="p") == []


def test_a_chunked_body_over_the_limit_is_413(api):
    def chunks():
        yield b'{"type": "t", "payload": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    r = api.c.post("/api/v1/jobs", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in r.request.headers
    assert_problem(r, 413, "payload_too_large")
    assert api.local.list(project="p") == []


def test_a_body_under_the_limit_is_accepted(api):
    r = api.c.post("/api/v1/jobs", json={"type": "t", "payload": "z" * (LIMIT - 100)})
    assert r.status_code == 201


def test_invalid_json_is_422_naming_the_body(api):
    r = api.c.post("/api/v1/jobs", content=b'{"type": "t",', headers={
        "content-type": "application/json"})
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["field"] == "body"


@pytest.mark.parametrize("payload,field", [
    ({}, "type"),
    ({"type": ""}, "type"),
    ({"type": "t", "priority": "high"}, "priority"),
    ({"type": "t", "max_attempts": 0}, "max_attempts"),
    ({"type": "t", "budget": {"max_calls": -1}}, "budget.max_calls"),
    ({"type": "t", "budget": {"max_cost_usd": "lots"}}, "budget.max_cost_usd"),
    ({"type": "t", "budget": {"max_dollars": 1}}, "budget.max_dollars"),
    ({"type": "t", "colour": "red"}, "colour"),
    ({"type": "t", "run_after": "yesterday-ish"}, "run_after"),
    ({"type": "t", "priority": True}, "priority"),  # lax pydantic would read 1
    ({"type": "t", "max_attempts": "3"}, "max_attempts"),  # and 3
    ({"type": "t", "budget": {"max_duration_s": True}}, "budget.max_duration_s"),
    ({"type": "t", "budget": {"max_calls": "5"}}, "budget.max_calls"),
    ({"type": "t", "budget": {"max_output_tokens": False}}, "budget.max_output_tokens"),
])
def test_invalid_fields_are_422_naming_the_field(api, payload, field):
    body = assert_problem(api.c.post("/api/v1/jobs", json=payload), 422, "validation_error")
    assert field in [e["field"] for e in body["errors"]]
    assert body["detail"].startswith(body["errors"][0]["field"])


def test_numbers_written_as_whole_floats_are_integers_as_json_schema_says(api):
    r = api.c.post("/api/v1/jobs", json={"type": "t", "priority": 3.0, "max_attempts": 2.0,
                                         "budget": {"max_calls": 5.0, "max_duration_s": 2}})
    assert r.status_code == 201, r.text
    job = r.json()
    assert (job["priority"], job["max_attempts"]) == (3, 2)
    assert job["budget"]["limits"]["max_calls"] == 5
    assert job["budget"]["limits"]["max_duration_s"] == 2.0


def test_a_start_time_as_a_number_is_unix_seconds_at_any_size(api):
    """As the Python API reads it: pydantic alone took a number past 2e10 for milliseconds
    (4e10 would have been 1971-04-26)."""
    from datetime import UTC, datetime
    r = api.c.post("/api/v1/jobs", json={"type": "t", "run_after": 4e10})
    assert r.status_code == 201, r.text
    assert datetime.fromisoformat(r.json()["run_after"]) == datetime.fromtimestamp(4e10, UTC)
    for late in (1e12, 253402300800):  # past 9999-12-31 23:59:59 UTC
        body = assert_problem(api.c.post("/api/v1/jobs", json={"type": "t", "run_after": late}),
                              422, "validation_error")
        assert body["errors"][0]["field"] == "run_after" and "Unix seconds" in body["detail"]
    r = api.c.post("/api/v1/jobs", json={"type": "t", "run_after": "9999-12-31T23:59:59-01:00"})
    assert_problem(r, 422, "invalid_payload")


def test_a_payload_tether_cannot_store_is_422_invalid_payload(api):
    r = api.c.post("/api/v1/jobs", content=b'{"type": "t", "payload": NaN}',
                   headers={"content-type": "application/json"})
    assert_problem(r, 422, "invalid_payload")


@pytest.mark.parametrize("path,field", [
    ("/api/v1/jobs?state=sleeping", "state"),
    ("/api/v1/jobs?limit=0", "limit"),
    ("/api/v1/jobs?limit=abc", "limit"),
    ("/api/v1/jobs/abc", "job_id"),
    ("/api/v1/jobs/0", "job_id"),
    ("/api/v1/jobs/99999999999999999999", "job_id"),
    ("/api/v1/jobs/1/events?after=-1", "after"),
    ("/api/v1/jobs?stat=failed", "stat"),  # a typo is refused, not ignored
    ("/api/v1/jobs?state=failed&state=queued", "state"),  # one value each
    ("/api/v1/jobs/1?wait=5", "wait"),
])
def test_invalid_query_and_path_values_are_422_naming_them(api, path, field):
    body = assert_problem(api.c.get(path), 422, "validation_error")
    assert body["errors"][0]["field"] == field


def test_unknown_routes_and_methods_are_problems_too(api):
    assert_problem(api.c.get("/api/v1/nothing-here"), 404, "not_found")
    assert_problem(api.c.delete("/api/v1/jobs"), 405, "method_not_allowed")


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("DELETE", "/api/v1/jobs", "GET, POST"),
    ("PUT", "/api/v1/schedules", "GET, POST"),
    ("POST", "/api/v1/schedules/nightly", "GET, DELETE"),
    ("DELETE", "/api/v1/projects/p/budget", "GET, PUT"),
    ("GET", "/api/v1/jobs/1/budget", "PATCH"),
    ("POST", "/healthz", "GET"),
])
def test_a_405_allows_every_method_of_the_resource(api, method, path, allow):
    r = api.c.request(method, path)
    assert_problem(r, 405, "method_not_allowed")
    assert r.headers["Allow"] == allow
    for other in allow.split(", "):  # each method named is served there (not another 405)
        assert api.c.request(other, path).status_code != 405, other


def test_openapi_documents_every_route_and_problem_responses(api):
    doc = api.c.get("/openapi.json").json()
    want = {
        ("post", "/api/v1/jobs"), ("get", "/api/v1/jobs"), ("get", "/api/v1/jobs/{job_id}"),
        ("get", "/api/v1/jobs/{job_id}/events"), ("get", "/api/v1/jobs/{job_id}/attempts"),
        ("get", "/api/v1/jobs/{job_id}/ledger"), ("patch", "/api/v1/jobs/{job_id}/budget"),
        ("get", "/api/v1/queues"), ("post", "/api/v1/queues/{name}/pause"),
        ("post", "/api/v1/queues/{name}/resume"), ("get", "/api/v1/workers"),
        ("get", "/api/v1/types"), ("post", "/api/v1/types/{name}/pause"),
        ("post", "/api/v1/types/{name}/resume"), ("get", "/api/v1/limits"),
        ("put", "/api/v1/limits/{scope}/{name}"), ("delete", "/api/v1/limits/{scope}/{name}"),
        ("get", "/healthz"), ("get", "/metrics"),
    } | {("post", f"/api/v1/jobs/{{job_id}}/{a}")
         for a in ("cancel", "pause", "resume", "retry", "requeue")}
    have = {(m, p) for p, item in doc["paths"].items() for m in item}
    assert want <= have, want - have
    submit = doc["paths"]["/api/v1/jobs"]["post"]["responses"]
    assert {"200", "201", "202", "400", "401", "413", "422"} <= set(submit)
    assert list(submit["422"]["content"]) == ["application/problem+json"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_insecure_mode_needs_no_token(tmp_path):
    url = f"sqlite:///{tmp_path}/insecure.db"
    with run_server(url, tmp_path, insecure=True) as srv, srv.client() as c:
        r = c.post("/api/v1/jobs", json={"type": "t"})
        assert r.status_code == 201 and r.json()["project"] == "default"
        assert c.get("/api/v1/workers").status_code == 200
    assert "AUTHENTICATION IS OFF" in srv.log.read_text()
