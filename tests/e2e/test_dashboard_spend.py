"""The dashboard's Spend page in Chromium, on both backends: the spend chart and the budget
burn-down are drawn (their series' colours are on the canvas) from the API's numbers, with the
vendored chart library and nothing loaded from another site. Screenshots:
``test-output/dashboard/spend-<backend>.png``."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.e2e.dashboard_site import CHROMIUM, MARKS, SHOTS, WAIT_MS, expect, playwright_sync, shot
from tests.e2e.spend_site import spend_site  # noqa: F401 - fixture
from tests.spend_seed import BUDGETS, MODELS, PROJECTS

pytestmark = MARKS

PALETTE = ["#3451c7", "#27b39b", "#c0362c", "#a4640a", "#7c4dbd", "#2b8ac6"]

PAINTED = """(sel) => {
  const canvas = document.querySelector(sel + " canvas");
  if (!canvas) return null;
  const d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  const colours = {};
  let painted = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] === 0) continue;
    painted++;
    const hex = "#" + [d[i], d[i + 1], d[i + 2]]
      .map((x) => x.toString(16).padStart(2, "0")).join("");
    colours[hex] = (colours[hex] || 0) + 1;
  }
  return { width: canvas.width, height: canvas.height, painted, colours };
}"""


@pytest.fixture(scope="module")
def chromium():
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield browser
        browser.close()


def _data(page, selector: str, name: str):
    """What a chart element says it plotted (``data-series``: labels, ``data-values``)."""
    return page.eval_on_selector(selector, f"el => JSON.parse(el.dataset.{name})")


def _page(chromium, site, who: str):
    ctx = chromium.new_context(base_url=site.server.url, viewport={"width": 1400, "height": 900})
    ctx.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    foreign: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    ctx.on("request", lambda r: None if r.url.startswith(site.server.url)
           else foreign.append(r.url))
    ctx.add_init_script(f"if (location.origin === {json.dumps(site.server.url)}) "
                        f"localStorage.setItem('tether.token', {json.dumps(site.tokens[who])});")
    return ctx, ctx.new_page(), errors, foreign


def test_spend_chart_and_burn_down_render(chromium, spend_site):
    site = spend_site
    ctx, page, errors, foreign = _page(chromium, site, "admin")
    try:
        page.goto("/spend")
        expect(page.locator("#spend-chart canvas")).to_be_visible()
        expect(page.locator("#burn-chart canvas")).to_be_visible()
        want = site.app.spend(("project", "model", "day"), since=site.seeded.since)
        expect(page.locator("#spend-stats")).to_have_attribute(
            "data-cost", format(want.total.cost_usd.normalize(), "f"))

        labels = [f"{p} · {m}" for p in PROJECTS for m in sorted(MODELS)]
        assert _data(page, "#spend-chart", "series") == labels
        assert _data(page, "#burn-chart", "series") == sorted(BUDGETS)
        legend = page.locator("#spend-chart .u-legend .u-series .u-label")
        assert legend.all_inner_texts() == ["Day", *labels]

        spend = page.evaluate(PAINTED, "#spend-chart")
        assert spend["width"] > 600 and spend["painted"] > 2000
        for colour in PALETTE[:len(labels)]:
            assert spend["colours"].get(colour, 0) > 20, (colour, "series line not drawn")
        burn = page.evaluate(PAINTED, "#burn-chart")
        for colour in PALETTE[:len(BUDGETS)]:
            assert burn["colours"].get(colour, 0) > 20, (colour, "burn-down line not drawn")

        # Burn-down: the share of the limit left at the end of each shown day, anchored at
        # the project's spend to date and walked back through the days' spend.
        days = _data(page, "#spend-chart", "values")
        burned = _data(page, "#burn-chart", "values")
        assert len(days[0]) == len(burned[0]) == 30
        per_day = {(r.project, r.day): Decimal(0) for r in want.rows}
        for r in want.rows:
            per_day[(r.project, r.day)] += r.cost_usd
        for values, project in zip(burned, sorted(BUDGETS)):
            limit = Decimal(BUDGETS[project])
            left = limit - site.app.project_budget(project).used.spent_usd
            assert values[-1] == pytest.approx(float(left / limit * 100))  # today: no calls
            for back, day in enumerate(reversed(site.seeded.days), start=2):
                assert values[-back] == pytest.approx(float(left / limit * 100)), day
                left += per_day[(project, day)]
            assert values[0] == pytest.approx(100.0)  # before the first call
        # The table under the burn-down: each limited project's spend to date, exact.
        for project in BUDGETS:
            cell = page.locator(f"#burn-body tr[data-project='{project}'] td[data-spent]")
            spent = Decimal(cell.get_attribute("data-spent"))
            assert spent == site.app.project_budget(project).used.spent_usd
        rows = page.locator("#spend-body tr")
        assert rows.count() == len(want.rows) == 18
        shot(page, f"spend-{site.backend}")
        assert (SHOTS / f"spend-{site.backend}.png").stat().st_size > 10_000

        page.select_option("#spend-window", "7")
        expect(page.locator("#spend-body tr")).to_have_count(18)
    finally:
        ctx.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not foreign, f"the page loaded from another site: {foreign}"


def test_a_project_token_charts_only_its_projects(chromium, spend_site):
    site = spend_site
    ctx, page, errors, _ = _page(chromium, site, "alpha")
    try:
        page.goto("/spend")
        expect(page.locator("#spend-chart canvas")).to_be_visible()
        assert _data(page, "#spend-chart", "series") == [f"alpha · {m}" for m in sorted(MODELS)]
        assert _data(page, "#burn-chart", "series") == ["alpha"]
    finally:
        ctx.close()
    assert not errors, errors
