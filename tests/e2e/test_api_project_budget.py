"""A project's budget over real HTTP (``GET``/``PUT /api/v1/projects/{p}/budget``), over MCP
stdio and in ``/metrics``, on both backends: the facade's figures for the current period and
all time, scoped by token, bad input as problem details, a period pause readable on the job."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import get_args

import anyio
import pytest

from tether.core.periods import PERIODS
from tether.store.accounting import in_period
from tether.wire.budgets import Period
from tests.e2e.mcp_harness import data, failure, stdio
from tests.e2e.period_site import CALLS, period_site, run_calls  # noqa: F401 - fixture


def _at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_a_periodic_budget_reads_as_the_facade_says(period_site):
    site = period_site
    with site.server.client(site.tokens["admin"]) as http:
        daily = http.get("/api/v1/projects/daily/budget")
        monthly = http.get("/api/v1/projects/monthly/budget").json()
        lifetime = http.get("/api/v1/projects/lifetime/budget").json()
        unseen = http.get("/api/v1/projects/unseen/budget").json()
    assert daily.status_code == 200, daily.text
    body = daily.json()
    want = site.app.project_budget("daily")
    assert body["project"] == "daily"
    assert body["limits"] == {"max_cost_usd": "0.00004", "max_calls": None,
                              "max_input_tokens": None, "max_output_tokens": None,
                              "max_duration_s": None, "max_examples": None, "period": "day",
                              "timezone": "Europe/Berlin", "period_resume": True,
                              "thresholds": None, "soft": None}
    checked = in_period(want.used, want.period_used)
    assert Decimal(body["period_used"]["spent_usd"]) == checked.spent_usd > 0
    assert body["period_used"]["calls"] == want.period_used.calls < CALLS["daily"]
    assert Decimal(body["period_used"]["spent_usd"]) <= Decimal("0.00004")
    assert _at(body["period_start"]) == want.period_start
    assert _at(body["period_end"]) == want.period_end
    assert datetime.fromisoformat(body["period_end"]).utcoffset().total_seconds() == 0
    assert Decimal(body["used"]["spent_usd"]) == want.used.spent_usd
    assert monthly["limits"]["period"] == "month" and monthly["limits"]["timezone"] == "UTC"
    assert monthly["period_used"]["calls"] == monthly["used"]["calls"] == CALLS["monthly"]
    assert lifetime["limits"]["period"] is None and lifetime["period_used"] is None
    assert lifetime["period_end"] is None and lifetime["used"]["calls"] == CALLS["lifetime"]
    assert unseen["limits"]["max_cost_usd"] is None and unseen["used"]["spent_usd"] == "0"


def test_a_project_token_reads_its_own_budget_only_and_sets_none(period_site):
    site = period_site
    with site.server.client(site.tokens["daily"]) as http:
        assert http.get("/api/v1/projects/daily/budget").status_code == 200
        other = http.get("/api/v1/projects/monthly/budget")
        assert other.status_code == 404 and other.json()["code"] == "not_found"
        assert other.headers["content-type"].startswith("application/problem+json")
        put = http.put("/api/v1/projects/daily/budget", json={"max_cost_usd": "9"})
        assert put.status_code == 403 and put.json()["code"] == "forbidden"
    assert site.app.project_budget("daily").limits.max_cost_usd == Decimal("0.00004")
    with site.server.client() as anonymous:
        assert anonymous.get("/api/v1/projects/daily/budget").status_code == 401


def test_put_replaces_the_limits_and_answers_the_new_budget(period_site):
    site = period_site
    with site.server.client(site.tokens["admin"]) as http:
        first = http.put("/api/v1/projects/fresh/budget", json={
            "max_cost_usd": "2.50", "max_calls": 7, "period": "week",
            "timezone": "Asia/Tokyo", "period_resume": False})
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["limits"]["max_cost_usd"] == "2.5" and body["limits"]["max_calls"] == 7
        assert body["limits"]["period_resume"] is False
        start = datetime.fromisoformat(body["period_start"])
        assert (_at(body["period_end"]) - start.timestamp()) == 7 * 86400
        second = http.put("/api/v1/projects/fresh/budget", json={"max_calls": 3}).json()
        again = http.get("/api/v1/projects/fresh/budget").json()
    assert second == again
    assert again["limits"]["max_calls"] == 3 and again["limits"]["max_cost_usd"] is None
    assert again["limits"]["period"] is None and again["period_used"] is None
    status = site.app.project_budget("fresh")
    assert status.limits.max_calls == 3 and status.limits.period is None


@pytest.mark.parametrize("body, code, field", [
    ({"period": "year"}, "validation_error", "period"),
    ({"max_cost_usd": "-1"}, "validation_error", "max_cost_usd"),
    ({"max_cost_usd": -0.5}, "validation_error", "max_cost_usd"),
    ({"max_calls": 2, "colour": "red"}, "validation_error", "colour"),
    ({"max_duration_s": True}, "validation_error", "max_duration_s"),  # not 1 second
    ({"max_calls": "2"}, "validation_error", "max_calls"),
    ({"period": "day", "timezone": "Mars/Olympus"}, "invalid_payload", "timezone"),
    ({"timezone": "Europe/Berlin"}, "invalid_payload", "period"),
])
def test_bad_input_is_a_problem(period_site, body, code, field):
    with period_site.server.client(period_site.tokens["admin"]) as http:
        resp = http.put("/api/v1/projects/bad/budget", json=body)
    assert resp.status_code == 422, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    problem = resp.json()
    assert problem["code"] == code
    if code == "validation_error":
        assert field in [e["field"] for e in problem["errors"]]
    else:  # schema-valid input refused for what the schema cannot say: the argument is named
        assert problem["argument"] == field
    assert problem["detail"].startswith(f"{field}: ")
    assert period_site.app.project_budget("bad").limits.empty


def test_a_period_pause_is_readable_on_the_job(period_site):
    site = period_site
    status = site.app.project_budget("daily")
    with site.server.client(site.tokens["daily"]) as http:
        job = http.get(f"/api/v1/jobs/{site.jobs['daily']}").json()
    assert job["state"] == "paused" and job["error_code"] == "period_budget_exhausted"
    assert _at(job["run_after"]) == status.period_end
    assert "for this day" in job["error_summary"]
    assert job["error_summary"].endswith("00:00 Europe/Berlin")


def _metrics(text: str) -> dict[tuple[str, frozenset], float]:
    """Samples by (name, labels) from Prometheus text."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, value = line.rsplit(" ", 1)
        name, _, labels = series.partition("{")
        pairs = [p.split("=", 1) for p in labels.rstrip("}").split(",") if p]
        out[(name, frozenset((k, v.strip('"')) for k, v in pairs))] = float(value)
    return out


def _key(name: str, **labels: str) -> tuple[str, frozenset]:
    return name, frozenset(labels.items())


def test_metrics_carry_each_projects_period_and_lifetime_budget(period_site):
    site = period_site
    with site.server.client(site.tokens["admin"]) as http:
        got = _metrics(http.get("/metrics").text)
    daily = site.app.project_budget("daily")
    checked = in_period(daily.used, daily.period_used)
    day = {"project": "daily", "period": "day"}
    assert got[_key("tether_project_period_used_usd", **day)] == pytest.approx(
        float(checked.spent_usd + checked.reserved_usd))
    assert got[_key("tether_project_period_limit_usd", **day)] == pytest.approx(0.00004)
    assert got[_key("tether_project_period_end_timestamp_seconds", **day)] == daily.period_end
    assert got[_key("tether_project_period_limit_usd", project="monthly",
                    period="month")] == 0.5
    assert got[_key("tether_project_budget_limit_usd", project="lifetime")] == 1.0
    assert _key("tether_project_budget_limit_usd", project="daily") not in got
    lifetime = site.app.project_budget("lifetime")
    assert got[_key("tether_project_spent_usd", project="lifetime")] == pytest.approx(
        float(lifetime.used.spent_usd))
    assert got[_key("tether_period_budget_paused_jobs")] == 1


def test_mcp_tools_read_and_set_a_project_budget(period_site):
    site = period_site

    async def session():
        async with stdio(site.url, site.tokens["daily"]) as client:
            own = data(await client.call_tool("tether_get_project_budget",
                                              {"project": "daily"}))
            other = await client.call_tool("tether_get_project_budget", {"project": "monthly"})
            denied = await client.call_tool("tether_set_project_budget", {
                "project": "daily", "budget": {"max_cost_usd": "9"}})
        async with stdio(site.url) as client:
            made = data(await client.call_tool("tether_set_project_budget", {
                "project": "mcp-made", "budget": {"max_cost_usd": "3", "period": "month",
                                                  "timezone": "America/New_York"}}))
            bad = await client.call_tool("tether_set_project_budget", {
                "project": "mcp-made", "budget": {"period": "fortnight"}})
            zoned = await client.call_tool("tether_set_project_budget", {
                "project": "mcp-made", "budget": {"timezone": "Europe/Berlin"}})
        return own, other, denied, made, bad, zoned

    own, other, denied, made, bad, zoned = anyio.run(session)
    with site.server.client(site.tokens["admin"]) as http:
        rest = http.get("/api/v1/projects/daily/budget").json()
    assert own == rest
    assert failure(other)[1]["code"] == "not_found"
    assert failure(denied)[1]["code"] == "forbidden"
    assert made["limits"]["period"] == "month" and made["limits"]["max_cost_usd"] == "3"
    assert made["limits"]["timezone"] == "America/New_York"
    assert failure(bad)[1]["code"] == "validation_error"
    assert failure(zoned)[1]["detail"].startswith("period: required with a timezone")
    assert site.app.project_budget("mcp-made").limits.timezone == "America/New_York"


def test_the_wire_periods_are_the_engines():
    assert get_args(Period) == PERIODS


def test_a_daily_budget_put_mid_day_counts_what_the_day_spent_before(period_site):
    site = period_site
    assert run_calls(site.app, "gamma", 4).state == "succeeded"
    spent = site.app.project_budget("gamma").used.spent_usd
    limit = spent * Decimal("1.5")  # room for two more calls of the same cost
    with site.server.client(site.tokens["admin"]) as http:
        put = http.put("/api/v1/projects/gamma/budget", json={
            "max_cost_usd": str(limit), "period": "day", "timezone": "UTC"})
        assert put.status_code == 200, put.text
        assert Decimal(put.json()["period_used"]["spent_usd"]) == spent > 0
        assert put.json()["period_used"]["calls"] == 4
        second = run_calls(site.app, "gamma", 10)
        got = http.get("/api/v1/projects/gamma/budget").json()
    try:
        assert second.state == "paused" and second.error_code == "period_budget_exhausted"
        assert got["period_used"]["calls"] == 6 and got["used"]["calls"] == 6
        assert Decimal(got["period_used"]["spent_usd"]) <= limit
    finally:
        site.app.cancel(second.id)
