"""Spend reports on every backend: grouped in the database, exact to the last digit, equal to
the ledger and to the simulated provider's own bill."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from tether import Usage
from tether.cli.output import usd
from tether.errors import InvalidArgument
from tether.providers.simulated import read_bill

from tests.e2e.clitools import run_main
from tests.money import PRICE, reserve, running_job
from tests.spend_seed import DAYS, MODELS, PROJECTS, seed

CENT = Decimal("0.01")
FIRST_DAY = datetime(2026, 3, 9, tzinfo=timezone.utc)  # a Monday


@pytest.fixture
def seeded(app, clock, tmp_path):
    return seed(app, clock, tmp_path / "bill.jsonl", first_day=FIRST_DAY)


def _ledger_groups(app, seeded) -> dict[tuple[str, str, str], Decimal]:
    groups: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for (project, model, day), job_id in seeded.jobs.items():
        for row in app.ledger(job_id):
            assert (row.project, row.model) == (project, model)
            assert row.created_at.strftime("%Y-%m-%d") == day
            groups[(project, model, day)] += row.cost_usd
    return groups


def test_spend_totals_equal_the_ledger_and_the_providers_bill(app, seeded, tmp_path, capsys,
                                                              database_url, monkeypatch):
    """The show item: 3 projects x 2 models x 3 days of simulated calls; `tether spend`
    (the console script's entry point, ``tether.cli.main.main``, over the same database)
    gives per group and in total what the ledger holds and what the provider billed, exactly,
    hence to the cent."""
    monkeypatch.setenv("NO_COLOR", "1")
    ledger = _ledger_groups(app, seeded)
    job_group = {job_id: key for key, job_id in seeded.jobs.items()}
    billed: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for entry in read_bill(tmp_path / "bill.jsonl"):
        assert entry.status == "ok"
        billed[job_group[entry.job_id]] += entry.cost_usd
    assert len(ledger) == len(billed) == len(PROJECTS) * len(MODELS) * DAYS == 18
    assert ledger == billed

    window = ("--since", seeded.since.isoformat(), "--until", seeded.until.isoformat())
    r = run_main(capsys, "spend", "--by", "project,model,day", "--json", *window,
                 db=database_url)
    assert r.code == 0, r
    report = json.loads(r.out)
    assert report["by"] == ["project", "model", "day"]
    got = {(x["project"], x["model"], x["day"]): Decimal(x["cost_usd"]) for x in report["rows"]}
    assert got == ledger
    assert list(got) == sorted(got), "rows in the order of --by"
    total = sum(ledger.values(), Decimal(0))
    assert Decimal(report["total"]["cost_usd"]) == total == sum(billed.values(), Decimal(0))
    assert report["total"]["calls"] == sum(len(app.ledger(j)) for j in seeded.jobs.values())
    assert set(report["budgets"]) == set(PROJECTS)
    assert Decimal(report["budgets"]["alpha"]["limits"]["max_cost_usd"]) == Decimal("0.05")
    assert Decimal(report["budgets"]["alpha"]["used"]["spent_usd"]) == sum(
        (v for k, v in ledger.items() if k[0] == "alpha"), Decimal(0))

    r = run_main(capsys, "spend", "--by", "model", "--csv", *window, db=database_url)
    assert r.code == 0, r
    lines = list(csv.DictReader(io.StringIO(r.out)))
    assert [x["model"] for x in lines] == sorted(MODELS)
    for line in lines:
        want = sum((v for k, v in ledger.items() if k[1] == line["model"]), Decimal(0))
        assert Decimal(line["cost_usd"]) == want
        assert "E" not in line["cost_usd"], "money as plain decimal text"

    r = run_main(capsys, "spend", "--by", "project", *window, db=database_url)
    assert r.code == 0, r
    total_line = next(line for line in r.out.splitlines() if "total" in line)
    assert usd(total) in total_line
    assert total.quantize(CENT) == sum(billed.values(), Decimal(0)).quantize(CENT)
    assert "gamma" in r.out


def test_any_subset_and_order_of_dimensions(app, seeded):
    window = {"since": seeded.since, "until": seeded.until}
    ledger = _ledger_groups(app, seeded)
    (grand,) = app.spend((), **window).rows
    assert grand.cost_usd == sum(ledger.values(), Decimal(0))
    assert grand.project is None and grand.day is None
    by_day_project = app.spend(("day", "project"), **window)
    assert [r.key(("day", "project")) for r in by_day_project.rows] == [
        (d, p) for d in seeded.days for p in PROJECTS]
    assert by_day_project.budgets.keys() == set(PROJECTS)
    for r in by_day_project.rows:
        assert r.model is None
        assert r.cost_usd == sum((v for k, v in ledger.items()
                                  if (k[2], k[0]) == (r.day, r.project)), Decimal(0))
    by_type = app.spend("job_type,provider,stage", **window)
    (row,) = by_type.rows
    assert (row.job_type, row.provider, row.stage) == ("spend_work", "simulated", None)
    assert row.cost_usd == grand.cost_usd and row.calls == grand.calls
    assert row.reserved_usd >= row.cost_usd > 0
    assert app.spend("model", **window).budgets == {}


def test_weeks_and_months_and_the_window(app, seeded):
    weeks = app.spend("week", since=seeded.since, until=seeded.until).rows
    assert [w.week for w in weeks] == ["2026-03-09"]  # Monday 9 March starts the week
    months = app.spend("month").rows
    assert [m.month for m in months] == ["2026-03"]
    second = seeded.since + timedelta(days=1)
    (day,) = app.spend("day", since=second, until=second + timedelta(days=1)).rows
    assert day.day == seeded.days[1]
    assert app.spend("day", since=seeded.until).rows == []
    assert [r.project for r in app.spend("project", projects=["beta", "gamma"]).rows] == [
        "beta", "gamma"]
    assert app.spend("project", projects=[]).rows == []
    assert [r.project for r in app.spend("project", projects="gamma").rows] == ["gamma"]


def test_days_are_those_of_the_time_zone(app, clock):
    job, tok = running_job(app)
    # 23:30 UTC on Saturday 31 January: 1 February in Paris, still 31 January in New York.
    for i, at in enumerate((datetime(2026, 1, 31, 23, 30, tzinfo=timezone.utc),
                            datetime(2026, 1, 31, 12, 0, tzinfo=timezone.utc))):
        clock.set(at)
        reserve(app, job, tok, f"k{i}")
        app.store.settle(job.id, tok, key=f"k{i}", usage=Usage(1000, 0), price=PRICE,
                         profile_id="p", result_json="1")
    key = ("day", "week", "month")
    assert [r.key(key) for r in app.spend(key).rows] == [("2026-01-31", "2026-01-26", "2026-01")]
    paris = app.spend(key, tz="Europe/Paris")
    assert paris.tz == "Europe/Paris"
    assert [(r.key(key), r.calls) for r in paris.rows] == [
        (("2026-01-31", "2026-01-26", "2026-01"), 1), (("2026-02-01", "2026-01-26", "2026-02"), 1)]
    assert [r.calls for r in app.spend(key, tz="America/New_York").rows] == [2]
    # Relative windows are measured back from the app's clock.
    clock.set(datetime(2026, 2, 1, 0, 0, tzinfo=timezone.utc))
    assert app.spend((), since="1h").total.calls == 1
    assert app.spend((), since="1d", until="1h").total.calls == 1
    assert app.spend((), since="2d").total.calls == 2


def test_many_tiny_amounts_sum_exactly_and_unconfirmed_calls_count(app):
    """Floats would drift here (300 x 5e-7 is 0.00015000000000000004 as a float sum)."""
    job, tok = running_job(app)
    for i in range(300):
        reserve(app, job, tok, f"t{i}", cost="0.000001")
        app.store.settle(job.id, tok, key=f"t{i}", usage=Usage(1, 0), price=PRICE,
                         profile_id="p", result_json="1")
    reserve(app, job, tok, "lost", cost="0.25")
    app.store.release(job.id, tok, key="lost", error_code="timeout", error_summary="?",
                      billed=None)
    (row,) = app.spend(()).rows
    assert row.calls == 301 and row.unconfirmed_calls == 1
    assert row.cost_usd == Decimal("0.00015") + Decimal("0.25")
    assert row.reserved_usd == Decimal("0.000300") + Decimal("0.25")
    assert row.to_dict(())["cost_usd"] == "0.25015"
    assert app.spend(()).total.cost_usd == app.project_budget("default").used.spent_usd


@pytest.mark.parametrize("kwargs, argument", [
    ({"by": "project,colour"}, "by"),
    ({"by": ("model", "model")}, "by"),
    ({"by": "day", "tz": "Mars/Olympus"}, "tz"),
    ({"by": "day", "since": "yesterday"}, "since"),
    ({"by": "day", "since": "2026-02-02", "until": "2026-02-01"}, "since"),
    ({"by": "day", "projects": ["ok", ""]}, "project"),
])
def test_bad_questions_are_invalid_arguments(app, kwargs, argument):
    with pytest.raises(InvalidArgument) as info:
        app.spend(**kwargs)
    assert info.value.code == "invalid_argument"
    assert info.value.details["argument"] == argument
