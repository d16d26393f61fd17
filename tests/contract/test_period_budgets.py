"""Project budgets per day, week or month, by the store's clock in the budget's time zone: a job
pauses at the period's limit, before any call over it, and resumes when the period rolls over
(or stays paused, by option). Every backend, injected clock."""

from datetime import datetime, timezone

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
