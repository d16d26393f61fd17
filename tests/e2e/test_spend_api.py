"""``GET /api/v1/spend`` over real HTTP and ``tether_spend`` over MCP stdio, on both backends:
the facade's numbers as exact decimal text, scoped by token, bad input as problem details."""

from __future__ import annotations

from decimal import Decimal

import anyio
import pytest

from tests.e2e.mcp_harness import data, failure, stdio
from tests.e2e.spend_site import spend_site  # noqa: F401 - fixture
from tests.spend_seed import PROJECTS


def _window(site) -> dict[str, str]:
    return {"since": site.seeded.since.isoformat(), "until": site.seeded.until.isoformat()}


def test_rest_report_equals_the_facade_exactly(spend_site):
    site = spend_site
    want = site.app.spend(("project", "model", "day"), **_window(site))
    with site.server.client(site.tokens["admin"]) as http:
        resp = http.get("/api/v1/spend", params={"by": "project,model,day", **_window(site)})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["by"] == ["project", "model", "day"] and body["tz"] == "UTC"
    assert len(body["rows"]) == len(want.rows) == 18
    for got, row in zip(body["rows"], want.rows):
        assert (got["project"], got["model"], got["day"]) == row.key(want.by)
        assert got["provider"] is None and got["week"] is None
        assert isinstance(got["cost_usd"], str) and "E" not in got["cost_usd"]
        assert Decimal(got["cost_usd"]) == row.cost_usd and got["calls"] == row.calls
    assert Decimal(body["total"]["cost_usd"]) == want.total.cost_usd
    budgets = {b["project"]: b for b in body["budgets"]}
    assert set(budgets) == set(PROJECTS)
    assert budgets["alpha"]["limits"]["max_cost_usd"] == "0.05"
    assert budgets["gamma"]["limits"]["max_cost_usd"] is None


def test_a_project_token_sees_only_its_projects(spend_site):
    site = spend_site
    with site.server.client(site.tokens["alpha"]) as http:
        body = http.get("/api/v1/spend", params={"by": "project"}).json()
        assert [r["project"] for r in body["rows"]] == ["alpha"]
        assert [b["project"] for b in body["budgets"]] == ["alpha"]
        assert Decimal(body["total"]["cost_usd"]) == site.app.spend(
            "project", projects=["alpha"]).total.cost_usd
        denied = http.get("/api/v1/spend", params={"project": "beta"})
        assert denied.status_code == 403 and denied.json()["code"] == "forbidden"
    with site.server.client(site.tokens["admin"]) as http:
        only = http.get("/api/v1/spend", params={"by": "model", "project": "gamma"}).json()
        assert Decimal(only["total"]["cost_usd"]) == site.app.spend(
            "model", projects=["gamma"]).total.cost_usd
        assert only["budgets"] == []
    with site.server.client() as anonymous:
        assert anonymous.get("/api/v1/spend").status_code == 401


@pytest.mark.parametrize("params, argument", [
    ({"by": "project,colour"}, "by"),
    ({"since": "last tuesday"}, "since"),
    ({"until": "99999999999d"}, "until"),
    ({"tz": "Mars/Olympus"}, "tz"),
    ({"since": "2026-02-02", "until": "2026-02-01"}, "since"),
])
def test_bad_input_is_a_problem_naming_the_argument(spend_site, params, argument):
    with spend_site.server.client(spend_site.tokens["admin"]) as http:
        resp = http.get("/api/v1/spend", params=params)
    assert resp.status_code == 422
    assert resp.headers["content-type"].startswith("application/problem+json")
    problem = resp.json()
    assert problem["code"] == "invalid_argument" and problem["argument"] == argument


def test_unknown_query_parameters_are_refused(spend_site):
    with spend_site.server.client(spend_site.tokens["admin"]) as http:
        resp = http.get("/api/v1/spend", params={"group": "model"})
    assert resp.status_code == 422 and resp.json()["code"] == "validation_error"


def test_mcp_tool_answers_the_same_report(spend_site):
    site = spend_site
    want = site.app.spend(("model", "week"), tz="Europe/Paris")
    token = site.tokens["alpha"]

    async def session():
        async with stdio(site.url) as client:
            everything = data(await client.call_tool("tether_spend", {
                "by": ["model", "week"], "tz": "Europe/Paris"}))
            bad = await client.call_tool("tether_spend", {"by": ["colour"]})
        async with stdio(site.url, token) as client:
            scoped = data(await client.call_tool("tether_spend", {"by": ["project"]}))
            denied = await client.call_tool("tether_spend", {"project": "beta"})
        return everything, bad, scoped, denied

    everything, bad, scoped, denied = anyio.run(session)
    assert [(r["model"], r["week"], Decimal(r["cost_usd"])) for r in everything["rows"]] == [
        (r.model, r.week, r.cost_usd) for r in want.rows]
    assert everything["tz"] == "Europe/Paris"
    assert failure(bad)[1]["code"] == "validation_error"
    assert [r["project"] for r in scoped["rows"]] == ["alpha"]
    assert failure(denied)[1]["code"] == "forbidden"
