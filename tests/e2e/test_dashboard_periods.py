"""Periodic project budgets in the dashboard, in Chromium, on both backends: the Spend page's
table and burn-down of each project's current day/week/month (the API's figures), and a job
paused by its day's limit saying until when. Screenshot: ``test-output/dashboard/
periods-<backend>.png``."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from tests.e2e.dashboard_site import MARKS, SHOTS, expect, shot
from tests.e2e.period_site import period_site  # noqa: F401 - fixture
from tests.e2e.test_dashboard_spend import PAINTED, PALETTE, _data, _page, chromium  # noqa: F401

pytestmark = MARKS


def test_spend_page_shows_each_projects_current_period(chromium, period_site):
    site = period_site
    ctx, page, errors, foreign = _page(chromium, site, "admin")
    try:
        page.goto("/spend")
        expect(page.locator("#period-card")).to_be_visible()
        expect(page.locator("#period-chart canvas")).to_be_visible()
        expect(page.locator("#period-body tr")).to_have_count(2)
        with site.server.client(site.tokens["admin"]) as http:
            rest = {p: http.get(f"/api/v1/projects/{p}/budget").json()
                    for p in ("daily", "monthly")}
        for project, period, zone in (("daily", "day", "Europe/Berlin"),
                                      ("monthly", "month", "UTC")):
            row = page.locator(f"#period-body tr[data-project='{project}']")
            status = site.app.project_budget(project)
            assert Decimal(row.get_attribute("data-spent")) == status.period_used.spent_usd
            assert row.get_attribute("data-period") == period
            assert row.get_attribute("data-end") == rest[project]["period_end"]
            cells = row.locator("td").all_inner_texts()
            assert cells[1] == f"{ {'day': 'Daily', 'month': 'Monthly'}[period]} · {zone}"
            assert cells[6].startswith(str(status.period_used.calls))
            assert re.search(r"\(in \d+", cells[7]), cells[7]
        assert page.locator("#period-body tr[data-project='daily'] td").nth(3).inner_text() \
            == "$0.00004"

        # The burn-down: today's point is the period's limit left, as the budget says.
        assert _data(page, "#period-chart", "series") == ["daily · day", "monthly · month"]
        values = _data(page, "#period-chart", "values")
        for series, project in zip(values, ("daily", "monthly")):
            status = site.app.project_budget(project)
            limit = status.limits.max_cost_usd
            today = [v for v in series if v is not None][-1]
            assert today == pytest.approx(
                float((limit - status.period_used.spent_usd) / limit * 100))
        assert [v for v in values[0] if v is not None][-1] == pytest.approx(0.0)
        painted = page.evaluate(PAINTED, "#period-chart")
        for colour in PALETTE[:2]:
            assert painted["colours"].get(colour, 0) > 20, (colour, "period line not drawn")
        # The lifetime burn-down leaves the periodic budgets to this chart.
        assert _data(page, "#burn-chart", "series") == ["lifetime"]
        shot(page, f"periods-{site.backend}")
        assert (SHOTS / f"periods-{site.backend}.png").stat().st_size > 10_000
    finally:
        ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not foreign, f"the page loaded from another site: {foreign}"


def test_a_job_paused_by_its_days_budget_says_until_when(chromium, period_site):
    site = period_site
    ctx, page, errors, _ = _page(chromium, site, "daily")
    job_id = site.jobs["daily"]
    try:
        page.goto(f"/jobs/{job_id}")
        notice = page.locator("#job-period-pause")
        expect(notice).to_be_visible()
        expect(notice).to_contain_text("daily budget reached")
        assert re.match(r"Paused until .+ \(in \d+[hms]", notice.inner_text()), \
            notice.inner_text()
        with site.server.client(site.tokens["daily"]) as http:
            job = http.get(f"/api/v1/jobs/{job_id}").json()
        assert notice.get_attribute("data-until") == job["run_after"]
        assert notice.get_attribute("data-period") == "day"
        shot(page, f"period-pause-{site.backend}")
    finally:
        ctx.close()
    ctx, page, more, _ = _page(chromium, site, "admin")
    try:
        page.goto(f"/jobs/{site.jobs['monthly']}")
        expect(page.locator("#job-state")).to_have_attribute("data-state", "succeeded")
        expect(page.locator("#job-period-pause")).to_be_hidden()
    finally:
        ctx.close()
    assert not errors and not more, errors + more
