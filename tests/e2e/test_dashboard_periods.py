"""Periodic project budgets in the dashboard, in Chromium, on both backends: the Spend page's
table and burn-down of each project's current day/week/month (the API's figures), and a job
paused by its day's limit saying until when. Screenshot: ``test-output/dashboard/
periods-<backend>.png``."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from tests.e2e.dashboard_site import MARKS, SHOTS, expect, shot
from tests.e2e.period_site import period_site, run_calls  # noqa: F401 - fixture
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


def test_a_token_with_only_periodic_budgets_gets_no_empty_burn_down(chromium, period_site):
    ctx, page, errors, _ = _page(chromium, period_site, "daily")
    try:
        page.goto("/spend")
        expect(page.locator("#period-chart canvas")).to_be_visible()
        expect(page.locator("#burn-empty")).to_be_visible()
        expect(page.locator("#burn-chart")).to_be_hidden()
        assert _data(page, "#burn-chart", "series") == []
    finally:
        ctx.close()
    assert not errors, errors


def _series(page, selector: str, label: str) -> list:
    """What the chart plotted for ``label``, once it has drawn that series."""
    page.wait_for_function("([sel, label]) => JSON.parse(document.querySelector(sel)"
                           ".dataset.series || '[]').includes(label)", arg=[selector, label])
    return dict(zip(_data(page, selector, "series"), _data(page, selector, "values"),
                    strict=True))[label]


def test_a_budget_set_mid_day_and_limits_crossed_draw_as_their_tables_say(chromium,
                                                                          period_site):
    site = period_site
    app = site.app
    assert run_calls(app, "gamma", 4).state == "succeeded"
    spent = app.project_budget("gamma").used.spent_usd
    lifetime = app.project_budget("lifetime").used.spent_usd
    ctx, page, errors, _ = _page(chromium, site, "admin")
    try:
        app.set_project_budget("gamma", max_cost_usd=spent * 3, period="day", timezone="UTC")
        page.goto("/spend")
        row = page.locator("#period-body tr[data-project='gamma']")
        expect(row).to_have_count(1)
        assert Decimal(row.get_attribute("data-spent")) == spent  # what the day spent before
        today = [v for v in _series(page, "#period-chart", "gamma · day") if v is not None][-1]
        assert today == pytest.approx(200 / 3)  # as the table: $2s of $3s left

        app.set_project_budget("gamma", max_cost_usd=spent / 2, resume=False)
        app.set_project_budget("lifetime", max_cost_usd=lifetime / 2, resume=False)
        page.reload()
        period = [v for v in _series(page, "#period-chart", "gamma · day") if v is not None]
        burn = _series(page, "#burn-chart", "lifetime")
        assert min(period + burn) >= 0, "no share below the 0 % line"
        assert period[-1] == 0 and burn[-1] == 0
        expect(row.locator("td").nth(5)).to_contain_text("over by $")
        left = page.locator("#burn-body tr[data-project='lifetime'] td").nth(4)
        expect(left).to_contain_text("over by $")
        painted = page.evaluate(PAINTED, "#burn-chart")
        assert painted["colours"].get(PALETTE[0], 0) > 20, "the burn-down line is drawn"
    finally:
        ctx.close()
        app.set_project_budget("gamma", replace=True, resume=False)
        app.set_project_budget("lifetime", max_cost_usd="1", resume=False)
    assert not errors, errors
