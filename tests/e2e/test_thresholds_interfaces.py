"""Budget thresholds and soft budgets in every interface, over a real API server on both
backends: set where budgets are set (REST PUT/PATCH, MCP, CLI), crossings listed the same by
REST, MCP and the CLI, shown on the job, counted in ``/metrics``; bad thresholds refused."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator

import anyio
import pytest

from tether import Estimate, Metered, Tether, Usage
from tether.job import Lease
from tether.worker.executor import execute
from tests.e2e.api_harness import BACKENDS, Server, backend_url, run_server
from tests.e2e.clitools import run_main
from tests.e2e.mcp_harness import data, failure, stdio


@dataclass
class Site:
    url: str
    server: Server
    tokens: dict[str, str]
    app: Tether
    job: int
    queued: int


@pytest.fixture(scope="module", params=BACKENDS)
def site(request, tmp_path_factory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp(f"thresholds-{request.param}")
    url = backend_url(request.param, tmp)
    app = Tether(url)

    @app.job("metered_steps")
    def metered_steps(ctx, payload):
        for i in range(payload["calls"]):
            ctx.call(key=f"k{i}", provider="simulated", model="sim-small",
                     estimate=Estimate(input_tokens=10, max_output_tokens=10),
                     fn=lambda: Metered("x", Usage(10, 10)))
        return payload["calls"]

    tokens = {"admin": app.store.create_token(name="ops", projects=[], admin=True)[1],
              "alerts": app.store.create_token(name="a", projects=["alerts"], admin=False)[1],
              "other": app.store.create_token(name="o", projects=["other"], admin=False)[1]}
    try:
        with run_server(url, tmp) as server:
            with server.client(tokens["admin"]) as http:
                put = http.put("/api/v1/projects/alerts/budget", json={
                    "max_calls": 4, "thresholds": [0.5, 1], "soft": True})
                assert put.status_code == 200, put.text
            job = app.submit("metered_steps", {"calls": 5}, project="alerts",
                             budget={"max_calls": 10, "thresholds": [0.2]})
            (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
            execute(app, claim.job, Lease(claim.job.id, claim.attempt))
            queued = app.submit("metered_steps", {"calls": 1}, project="alerts")
            yield Site(url, server, tokens, app, job.id, queued.id)
    finally:
        app.close()


def test_rest_sets_reads_and_lists_crossings(site):
    with site.server.client(site.tokens["alerts"]) as http:
        budget = http.get("/api/v1/projects/alerts/budget").json()
        listed = http.get("/api/v1/projects/alerts/budget/crossings").json()["crossings"]
        only_job = http.get("/api/v1/projects/alerts/budget/crossings",
                            params={"job_id": site.job}).json()["crossings"]
        job = http.get(f"/api/v1/jobs/{site.job}").json()
        patched = http.patch(f"/api/v1/jobs/{site.queued}/budget",
                             json={"thresholds": [0.9], "soft": True, "resume": False})
    assert budget["limits"]["thresholds"] == [0.5, 1.0] and budget["limits"]["soft"] is True
    assert job["state"] == "succeeded", "a soft project budget never pauses"
    assert job["budget"]["limits"]["thresholds"] == [0.2]
    got = sorted((c["scope"], c["threshold"], c["used"], c["job_id"]) for c in listed)
    assert got == [("job", 0.2, "2", site.job), ("project", 0.5, "2", site.job),
                   ("project", 1.0, "4", site.job)]
    assert [c["threshold"] for c in only_job] == [0.2] and only_job[0]["metric"] == "calls"
    assert patched.status_code == 200, patched.text
    assert patched.json()["budget"]["limits"]["thresholds"] == [0.9]
    assert site.app.get(site.queued).budget.limits.soft is True
    events = [e.data for e in site.app.events(site.job) if e.kind == "budget_threshold"]
    assert sorted((d["scope"], d["threshold"]) for d in events) == [
        ("job", 0.2), ("project", 0.5), ("project", 1.0)]


def test_rest_scopes_and_refuses_bad_thresholds(site):
    with site.server.client(site.tokens["other"]) as http:
        hidden = http.get("/api/v1/projects/alerts/budget/crossings")
    assert hidden.status_code == 404 and hidden.json()["code"] == "not_found"
    with site.server.client(site.tokens["admin"]) as http:
        for bad in ([0], [11], [True], ["0.5"], list(range(1, 12))):
            resp = http.put("/api/v1/projects/bad/budget", json={"thresholds": bad})
            assert resp.status_code == 422, (bad, resp.text)
            assert resp.json()["code"] == "validation_error"
        soft = http.put("/api/v1/projects/bad/budget", json={"soft": "yes"})
        assert soft.status_code == 422
        scope = http.get("/api/v1/projects/alerts/budget/crossings", params={"scope": "all"})
        assert scope.status_code == 422


def test_metrics_count_every_crossing(site):
    with site.server.client(site.tokens["admin"]) as http:
        text = http.get("/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("tether_budget_thresholds_total"))
    assert float(line.split()[-1]) == site.app.store.engine_stats()["budget_thresholds_total"]
    assert float(line.split()[-1]) >= 3


def test_mcp_sets_thresholds_and_lists_the_same_crossings(site):
    async def session():
        async with stdio(site.url, site.tokens["alerts"]) as client:
            listed = data(await client.call_tool("tether_budget_crossings",
                                                 {"project": "alerts", "scope": "project"}))
            hidden = await client.call_tool("tether_budget_crossings", {"project": "other2"})
        async with stdio(site.url) as client:
            made = data(await client.call_tool("tether_set_project_budget", {
                "project": "mcp-alerts",
                "budget": {"max_cost_usd": "3", "thresholds": [0.8], "soft": True}}))
            bad = await client.call_tool("tether_set_project_budget", {
                "project": "mcp-alerts", "budget": {"thresholds": [-1]}})
            job = data(await client.call_tool("tether_set_job_budget", {
                "job_id": site.queued, "budget": {"thresholds": [0.25, 0.75]},
                "resume": False}))
        return listed, hidden, made, bad, job

    listed, hidden, made, bad, job = anyio.run(session)
    assert job["budget"]["limits"]["thresholds"] == [0.25, 0.75]
    with site.server.client(site.tokens["alerts"]) as http:
        rest = http.get("/api/v1/projects/alerts/budget/crossings",
                        params={"scope": "project"}).json()
    assert listed == rest and len(listed["crossings"]) == 2
    assert failure(hidden)[1]["code"] == "not_found"
    assert made["limits"]["thresholds"] == [0.8] and made["limits"]["soft"] is True
    assert failure(bad)[1]["code"] == "validation_error"


def test_cli_sets_thresholds_and_prints_crossings(site, capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    r = run_main(capsys, "project", "budget", "cli-alerts", "--max-calls", "10",
                 "--thresholds", "50%,0.8", "--soft", db=site.url)
    assert r.code == 0, r.err
    assert "alerts: at 50%, 80% (soft: never pauses)" in r.out
    assert site.app.project_budget("cli-alerts").limits.thresholds == (0.5, 0.8)
    r = run_main(capsys, "project", "budget", "cli-alerts", "--thresholds", "none", "--hard",
                 db=site.url)
    limits = site.app.project_budget("cli-alerts").limits
    assert r.code == 0 and limits.thresholds is None and not limits.soft
    r = run_main(capsys, "project", "crossings", "alerts", "--json", db=site.url)
    assert r.code == 0, r.err
    printed = json.loads(r.out)
    assert [c["threshold"] for c in printed] == [
        c.threshold for c in site.app.budget_crossings("alerts")]
    r = run_main(capsys, "project", "crossings", "alerts", "--scope", "project", db=site.url)
    assert "100% of max_calls 4 reached (used 4) by job" in r.out
    r = run_main(capsys, "job", "budget", str(site.queued), "--thresholds", "0.3,0.6",
                 "--no-resume", db=site.url)
    assert r.code == 0, r.err
    r = run_main(capsys, "job", "status", str(site.queued), db=site.url)
    assert "at 30%, 60%" in r.out
    r = run_main(capsys, "job", "status", str(site.job), db=site.url)
    assert "crossed" in r.out and "20% of max_calls (2 of 10)" in r.out
    r = run_main(capsys, "job", "status", str(site.job), "--json", db=site.url)
    assert [c["threshold"] for c in json.loads(r.out)["crossings"]] == [0.2]
    r = run_main(capsys, "project", "budget", "bad", "--thresholds", "0,2", db=site.url)
    assert r.code != 0 and "thresholds" in r.err
