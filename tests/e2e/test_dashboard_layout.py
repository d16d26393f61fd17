"""What the dashboard shows at common desktop widths: buttons in sight, spend bars to scale,
money to enough digits (issue 21, defect 10).

Every check reads the laid-out page in Chromium: a button counts as visible when it has a size,
lies inside the viewport horizontally, and no ancestor that clips its overflow cuts it off.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, browser, context, expect, shot, signed_in, site, wait_for)

pytestmark = MARKS

WIDTHS = [1280, 1440, 1920]

HIDDEN_BUTTONS = """() => {
  const out = [];
  const viewport = document.documentElement.clientWidth;
  for (const b of document.querySelectorAll("button")) {
    if (b.closest("dialog") || b.closest("[hidden]")) continue;
    const name = (b.textContent.trim() || b.id) + (b.dataset.queue ? " " + b.dataset.queue : "");
    const r = b.getBoundingClientRect();
    if (!r.width || !r.height) { out.push(name + ": no size"); continue; }
    if (r.left < 0 || r.right > viewport + 0.5) { out.push(name + ": outside the viewport"); continue; }
    for (let a = b.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (style.overflowX === "visible" && style.overflowY === "visible") continue;
      const c = a.getBoundingClientRect();
      if (r.left < c.left - 0.5 || r.right > c.right + 0.5) {
        out.push(name + ": clipped by " + a.tagName.toLowerCase() + "." + a.className);
        break;
      }
    }
  }
  return out;
}"""

BARS = """() => Array.from(document.querySelectorAll("#jobs-body tr[data-job-id]")).flatMap((tr) => {
  const bar = tr.querySelector(".spend .bar");
  if (!bar) return [];
  const w = (sel) => bar.querySelector(sel).getBoundingClientRect().width;
  return [{ id: Number(tr.dataset.jobId), bar: bar.getBoundingClientRect().width,
            spent: w(".bar-spent"), reserved: w(".bar-reserved") }];
})"""


def _settled(site) -> None:
    for name in ("report-alpha", "report-share", "fails-1"):
        wait_for(lambda n=name: site.job(n)["state"] in ("succeeded", "failed", "paused"),
                 f"{name} to settle")


@pytest.mark.parametrize("width", WIDTHS)
def test_every_action_button_is_in_sight(context, site, width):
    _settled(site)
    page = signed_in(context, site, "admin")
    page.set_viewport_size({"width": width, "height": 900})

    page.goto("/jobs")
    expect(page.locator("#jobs-body tr[data-job-id]").first).to_be_visible()
    assert page.evaluate(HIDDEN_BUTTONS) == []

    page.goto(f"/jobs/{site.jobs['fails-1']}")
    expect(page.locator("#job-state")).to_have_attribute("data-state", "failed")
    expect(page.locator("#job-actions button")).to_have_count(7)  # with Fork from stage…
    assert page.evaluate(HIDDEN_BUTTONS) == []

    page.goto("/queues")
    buttons = page.locator("#queues-body button[data-action]")
    expect(buttons.first).to_be_visible()
    assert buttons.count() >= 4
    assert page.evaluate(HIDDEN_BUTTONS) == []
    shot(page, f"queues-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_spend_bars_fill_in_proportion_to_spend(context, site, width):
    _settled(site)
    with site.api() as client:
        jobs = {j["id"]: j for j in client.get("/jobs", params={"limit": 100}).json()["items"]}
    page = signed_in(context, site, "admin")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/jobs")
    expect(page.locator("#jobs-body tr[data-job-id]")).to_have_count(len(jobs))
    bars = page.evaluate(BARS)
    assert bars, "no job with a cost limit is listed"
    shares = []
    for bar in bars:
        budget = jobs[bar["id"]]["budget"]
        limit = Decimal(budget["limits"]["max_cost_usd"])
        spent = Decimal(budget["used"]["spent_usd"])
        share = float(min(1, spent / limit))
        assert bar["bar"] == pytest.approx(90, abs=1)
        if spent:
            assert bar["spent"] == pytest.approx(max(2, share * bar["bar"]), abs=1), bar
            shares.append(share)
        else:
            assert bar["spent"] == 0, bar
    assert max(shares) > 0.3 and min(shares) < 0.02, f"want a large and a small share: {shares}"
    shot(page, f"jobs-{width}")


USD = [
    (0, "$0"), ("0.00001", "$0.00001"), ("0.0000123456", "$0.00001235"), ("0.007", "$0.007"),
    ("0.0115", "$0.0115"), ("0.5", "$0.50"), ("0.12345", "$0.1235"), ("1.005", "$1.005"),
    ("2", "$2.00"), ("1234.5", "$1,234.50"), ("-0.25", "-$0.25"), (None, "—"),
]


def test_money_shows_enough_digits_to_tell_a_small_amount_from_zero(context, site):
    page = signed_in(context, site, "alpha")
    page.goto("/jobs?type=long_loop&state=queued")
    row = page.locator(f"#jobs-body tr[data-job-id='{site.jobs['tiny-limit']}']")
    expect(row.locator(".spend-text")).to_have_text("$0 / $0.00001")
    shown = page.evaluate("(values) => values.map((v) => window.tether.fmt.usd(v))",
                          [v for v, _ in USD])
    assert shown == [text for _, text in USD]

    page.goto(f"/jobs/{site.jobs['tiny-limit']}")
    expect(page.locator("#job-budget .budget[data-dim='cost']")).to_contain_text("of $0.00001")
