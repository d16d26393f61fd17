"""The schedule tools through the SDK's client over stdio, on both backends: create and
redefine (``created``), list, get, pause, resume, delete; strict arguments; the REST API's
project scoping and, for the same bad input, the same stable code as ``/api/v1/schedules``.
No worker or scheduler runs: the test runs the scheduler step itself at a chosen instant."""

from __future__ import annotations

from datetime import datetime

import anyio
import pytest
from fastapi.testclient import TestClient

from tether import Tether
from tether.api.server import create_app
from tests.e2e.mcp_harness import code, data, failure, stdio

BAD = [
    ({"cron": "0 3 * *"}, "invalid_argument"),
    ({"cron": "0 0 30 2 *"}, "invalid_argument"),
    ({"timezone": "Nowhere/City"}, "invalid_argument"),
    ({"name": "has space"}, "invalid_argument"),
    ({"catch_up": "sometimes"}, "validation_error"),
    ({"surprise": 1}, "validation_error"),
]


@pytest.fixture
def local(database_url):
    app = Tether(database_url)
    yield app
    app.close()


def ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_create_redefine_list_get_pause_resume_delete_over_mcp(database_url, local):
    _, token = local.store.create_token(name="agent", projects=["mine"], admin=False)
    args = {"name": "nightly-eval", "cron": "0 3 * * *", "timezone": "Europe/Berlin",
            "type": "echo", "payload": {"suite": "full"}, "budget": {"max_cost_usd": "2.5"},
            "catch_up": "all"}

    async def session():
        async with stdio(database_url, token) as client:
            first = data(await client.call_tool("tether_create_schedule", args))
            s = first["schedule"]
            assert first["created"] is True
            assert (s["name"], s["project"], s["timezone"], s["catch_up"], s["payload"],
                    s["paused"]) == ("nightly-eval", "mine", "Europe/Berlin", "all",
                                     {"suite": "full"}, False)
            assert s["budget"]["max_cost_usd"] == "2.5" and s["next_run_at"] is not None
            again = data(await client.call_tool("tether_create_schedule", {
                **args, "payload": {"suite": "smoke"}}))
            assert again["created"] is False
            assert again["schedule"]["payload"] == {"suite": "smoke"}
            assert again["schedule"]["next_run_at"] == s["next_run_at"]
            listed = data(await client.call_tool("tether_list_schedules", {}))["items"]
            assert [(x["name"], x["payload"]) for x in listed] == [
                ("nightly-eval", {"suite": "smoke"})]
            mine = data(await client.call_tool("tether_list_schedules", {"project": "mine"}))
            assert [x["name"] for x in mine["items"]] == ["nightly-eval"]
            got = data(await client.call_tool("tether_get_schedule", {"name": "nightly-eval"}))
            assert got == again["schedule"]
            paused = data(await client.call_tool("tether_pause_schedule",
                                                 {"name": "nightly-eval"}))
            assert paused["paused"] is True and paused["next_run_at"] is None
            assert local.store.run_schedules(now=ts(s["next_run_at"]) + 1) == []
            resumed = data(await client.call_tool("tether_resume_schedule",
                                                  {"name": "nightly-eval"}))
            assert resumed["paused"] is False and resumed["next_run_at"] is not None
            gone = data(await client.call_tool("tether_delete_schedule",
                                               {"name": "nightly-eval"}))
            assert gone["name"] == "nightly-eval" and gone["payload"] == {"suite": "smoke"}
            for tool in ("tether_get_schedule", "tether_delete_schedule"):
                missing = await client.call_tool(tool, {"name": "nightly-eval"})
                assert code(missing) == "schedule_not_found", tool
            assert data(await client.call_tool("tether_list_schedules", {}))["items"] == []

    anyio.run(session)
    assert local.schedules() == [] and local.list() == []


def test_another_projects_schedule_is_not_found_and_not_listed(database_url, local):
    local.schedule("theirs-nightly", cron="0 3 * * *", type="echo", project="theirs")
    _, token = local.store.create_token(name="agent", projects=["mine"], admin=False)
    _, several = local.store.create_token(name="two", projects=["mine", "b"], admin=False)

    async def session():
        async with stdio(database_url, token) as client:
            for tool in ("tether_get_schedule", "tether_pause_schedule",
                         "tether_resume_schedule", "tether_delete_schedule"):
                hidden = await client.call_tool(tool, {"name": "theirs-nightly"})
                assert code(hidden) == "schedule_not_found", tool
            assert data(await client.call_tool("tether_list_schedules", {}))["items"] == []
            other = await client.call_tool("tether_list_schedules", {"project": "theirs"})
            assert code(other) == "forbidden"
            base = {"cron": "* * * * *", "type": "echo"}
            into = await client.call_tool("tether_create_schedule", {
                **base, "name": "x", "project": "theirs"})
            assert code(into) == "forbidden"
            taken = await client.call_tool("tether_create_schedule", {
                **base, "name": "theirs-nightly"})
            assert code(taken) == "invalid_argument"
        async with stdio(database_url, several) as client:
            unnamed = await client.call_tool("tether_create_schedule", {
                "name": "y", "cron": "* * * * *", "type": "echo"})
            assert code(unnamed) == "validation_error"
            assert failure(unnamed)[1]["errors"][0]["field"] == "project"

    anyio.run(session)
    (kept,) = local.schedules()
    assert (kept.name, kept.project, kept.paused) == ("theirs-nightly", "theirs", False)


def test_bad_input_gets_the_code_rest_gives_and_stores_nothing(database_url, local):
    _, token = local.store.create_token(name="agent", projects=["mine"], admin=False)
    rest = TestClient(create_app(local), headers={"Authorization": f"Bearer {token}"})
    base = {"name": "bad", "cron": "* * * * *", "type": "echo"}

    async def session():
        async with stdio(database_url, token) as client:
            for change, expected in BAD:
                result = await client.call_tool("tether_create_schedule", {**base, **change})
                answer = rest.post("/api/v1/schedules", json={**base, **change})
                assert answer.status_code == 422, answer.text
                assert code(result) == answer.json()["code"] == expected, change
            typo = await client.call_tool("tether_create_schedule", {**base, "catchUp": "all"})
            text, problem = failure(typo)
            assert problem["code"] == "validation_error" and "did you mean 'catch_up'" in text
            extra = await client.call_tool("tether_pause_schedule", {"name": "bad", "now": 1})
            assert code(extra) == "validation_error"

    anyio.run(session)
    assert local.schedules() == []
