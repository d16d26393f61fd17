"""Project budgets per day, week or month, by the store's clock in the budget's time zone: a job
pauses at the period's limit, before any call over it, and resumes when the period rolls over
(or stays paused, by option). Every backend, injected clock."""

from datetime import datetime, timezone
from decimal import Decimal

import pytest

from tether import Estimate, InvalidPayload, JobState, Metered, Usage
from tether.core.periods import window

from tests.contract.test_waits import run_next

UTC = timezone.utc


def _steady(app, made):
    @app.job("steady", max_attempts=3)
    def steady(ctx, payload):
        for i in range(payload["calls"]):
            ctx.call(key=f"k{i}", provider="simulated", model="sim-small",
                     estimate=Estimate(input_tokens=10, max_output_tokens=10),
                     fn=lambda i=i: made.append(i) or Metered("x", Usage(10, 10)))
        return payload["calls"]


def test_a_daily_limit_pauses_and_the_next_day_resumes(app, clock):
    made = []
    _steady(app, made)
    clock.set(datetime(2026, 3, 10, 22, 30, tzinfo=UTC))  # 23:30 in Berlin
    app.set_project_budget("p", max_calls=3, period="day", timezone="Europe/Berlin")
    job = app.submit("steady", {"calls": 5}, project="p")
    paused = run_next(app)
    assert made == [0, 1, 2], "no call over the day's limit"
    assert paused.state == JobState.PAUSED and paused.error_code == "period_budget_exhausted"
    midnight = datetime(2026, 3, 10, 23, 0, tzinfo=UTC)  # 00:00 in Berlin
    assert paused.run_after == midnight
    status = app.project_budget("p")
    assert status.period_used.calls == 3 and status.period_end == midnight.timestamp()
    clock.set(datetime(2026, 3, 10, 22, 59, 59, tzinfo=UTC))
    assert app.store.promote_due() == 0
    assert run_next(app) is None
    clock.set(midnight)
    assert app.store.promote_due() == 1
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and made == [0, 1, 2, 3, 4]
    status = app.project_budget("p")
    assert status.period_used.calls == 2 and status.used.calls == 5
    assert status.to_dict()["period"]["timezone"] == "Europe/Berlin"
    kinds = [e.kind for e in app.events(job.id)]
    assert "budget_period_reset" in kinds


def test_a_money_limit_per_day_holds_before_each_call(app, clock):
    made = []
    _steady(app, made)
    clock.set(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))
    app.set_project_budget("m", max_cost_usd="0.00004", period="day")
    app.submit("steady", {"calls": 10}, project="m")
    run_next(app)
    status = app.project_budget("m")
    assert status.period_used.spent_usd <= status.limits.max_cost_usd
    assert 0 < len(made) < 10


def test_period_resume_false_keeps_the_job_paused(app, clock):
    made = []
    _steady(app, made)
    clock.set(datetime(2026, 3, 10, 12, 0, tzinfo=UTC))
    app.set_project_budget("q", max_calls=1, period="day", period_resume=False)
    job = app.submit("steady", {"calls": 2}, project="q")
    assert run_next(app).error_code == "budget_exhausted"
    clock.set(datetime(2026, 3, 11, 0, 0, 1, tzinfo=UTC))
    assert app.store.promote_due() == 0
    assert app.get(job.id).state == JobState.PAUSED and made == [0]


def test_a_job_budget_takes_no_period(app):
    @app.job("plain")
    def plain(ctx, payload):
        return None
    with pytest.raises(InvalidPayload):
        app.submit("plain", budget={"max_calls": 1, "period": "day"})
    with pytest.raises(InvalidPayload):
        app.set_project_budget("p", max_calls=1, period="fortnight")
    with pytest.raises(InvalidPayload):
        app.set_project_budget("p", max_calls=1, period="day", timezone="Mars/Olympus")


def test_windows_follow_the_wall_clock_of_their_zone():
    berlin_dst = datetime(2026, 3, 29, 12, 0, tzinfo=UTC).timestamp()  # clocks go forward
    w = window(berlin_dst, "day", "Europe/Berlin")
    assert w.end - w.start == 23 * 3600 and w.label == "day:2026-03-29"
    week = window(datetime(2026, 12, 3, 9, tzinfo=UTC).timestamp(), "week")  # a Thursday
    assert datetime.fromtimestamp(week.start, UTC) == datetime(2026, 11, 30, tzinfo=UTC)
    month = window(datetime(2026, 12, 31, 23, 59, tzinfo=UTC).timestamp(), "month")
    assert datetime.fromtimestamp(month.end, UTC) == datetime(2027, 1, 1, tzinfo=UTC)


def test_replacing_a_project_budget_drops_the_limits_it_leaves_out(app, clock):
    clock.set(datetime(2026, 3, 10, 12, 0, tzinfo=UTC))
    app.set_project_budget("r", max_calls=4, max_cost_usd="2", period="week",
                           timezone="Asia/Tokyo")
    kept = app.set_project_budget("r", max_calls=5)
    assert kept.limits.max_cost_usd == 2 and kept.limits.period == "week"
    replaced = app.set_project_budget("r", max_calls=6, replace=True)
    assert replaced.limits.max_calls == 6 and replaced.limits.max_cost_usd is None
    assert replaced.limits.period is None and replaced.period_used is None
    assert app.project_budget("r") == replaced


def test_a_period_pause_says_when_it_ends_in_the_budget_zone(app, clock):
    _steady(app, [])
    clock.set(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))
    app.set_project_budget("z", max_calls=1, period="month", timezone="America/New_York")
    app.submit("steady", {"calls": 2}, project="z")
    paused = run_next(app)
    assert paused.error_code == "period_budget_exhausted"
    assert paused.error_summary.endswith("the month ends 2026-08-01 00:00 America/New_York")
    assert paused.run_after == datetime(2026, 8, 1, 4, 0, tzinfo=UTC)


def test_a_budget_set_mid_period_counts_what_settled_earlier_in_it(app, clock):
    made = []
    _steady(app, made)
    clock.set(datetime(2026, 6, 1, 23, 0, tzinfo=UTC))  # the day before: not in the period
    app.submit("steady", {"calls": 3}, project="g")
    assert run_next(app).state == JobState.SUCCEEDED
    clock.set(datetime(2026, 6, 2, 9, 0, tzinfo=UTC))
    app.submit("steady", {"calls": 4}, project="g")
    assert run_next(app).state == JobState.SUCCEEDED
    today = sum(r.cost_usd for r in app.spend(("day",), projects=["g"]).rows
                if r.day == "2026-06-02")
    assert app.project_budget("g").used.calls == 7

    clock.set(datetime(2026, 6, 2, 10, 0, tzinfo=UTC))
    limit = today * Decimal("1.5")  # room for two more calls of the same cost
    status = app.set_project_budget("g", max_cost_usd=limit, period="day", timezone="UTC")
    assert status.period_used.spent_usd == today and status.period_used.calls == 4
    assert status.period_used.input_tokens == 40 and status.period_used.output_tokens == 40
    made.clear()
    app.submit("steady", {"calls": 10}, project="g")
    paused = run_next(app)
    assert paused.state == JobState.PAUSED and paused.error_code == "period_budget_exhausted"
    assert made == [0, 1], "no call over what the day has left"
    status = app.project_budget("g")
    assert status.period_used.calls == 6 and status.period_used.spent_usd <= limit


def test_a_new_period_or_zone_or_a_period_set_again_counts_from_the_ledger(app, clock):
    _steady(app, [])

    def run(calls):
        app.submit("steady", {"calls": calls}, project="z")
        assert run_next(app).state == JobState.SUCCEEDED

    def calls_in_period(**limits):
        return app.set_project_budget("z", max_calls=100, **limits).period_used.calls

    clock.set(datetime(2026, 6, 1, 9, 0, tzinfo=UTC))  # a Monday
    assert calls_in_period(period="day", timezone="UTC") == 0
    run(3)
    clock.set(datetime(2026, 6, 2, 1, 0, tzinfo=UTC))
    run(2)
    assert app.project_budget("z").period_used.calls == 2
    assert calls_in_period(period="week") == 5
    # 2026-06-01 21:00 in New York: that day began at 04:00 UTC and holds all five calls
    assert calls_in_period(period="day", timezone="America/New_York") == 5
    assert calls_in_period(period="day", timezone="UTC") == 2
    app.set_project_budget("z", max_calls=100, replace=True)  # no period for a while
    run(1)
    assert calls_in_period(period="day", timezone="UTC") == 3
    assert calls_in_period() == 3  # other limits changed: the period's count stays
