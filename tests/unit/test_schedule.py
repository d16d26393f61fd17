"""core/schedule.py: the ticks a cron names in a zone (DST included) and what each catch-up
mode enqueues. Pure logic; every expectation is an instant worked out by hand."""

from datetime import datetime, timezone

import pytest

from tether.core.schedule import ON_TIME_S, Cron, plan, tick_key
from tether.errors import InvalidArgument

UTC = timezone.utc


def ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")


@pytest.mark.parametrize("expr, zone", [
    ("0 3 * *", "UTC"), ("0 3 * * * *", "UTC"), ("61 * * * *", "UTC"), ("bad", "UTC"),
    ("0 0 30 2 *", "UTC"), ("@reboot", "UTC"), ("", "UTC"), (None, "UTC"),
    ("0 3 * * *", "Mars/Olympus"), ("0 3 * * *", ""), ("0 3 * * *", "../etc/passwd"),
])
def test_bad_cron_or_zone_is_invalid_argument(expr, zone):
    with pytest.raises(InvalidArgument):
        Cron.parse(expr, zone)


def test_next_after_is_strictly_after_and_aliases_work():
    c = Cron.parse("0 3 * * *", "UTC")
    assert c.next_after(ts(2026, 1, 1, 3)) == ts(2026, 1, 2, 3)
    assert c.next_after(ts(2026, 1, 1, 2, 59, 59)) == ts(2026, 1, 1, 3)
    assert Cron.parse("@daily", "UTC").next_after(ts(2026, 1, 1, 12)) == ts(2026, 1, 2)
    assert c.last_at_or_before(ts(2026, 1, 1, 3)) == ts(2026, 1, 1, 3)
    assert c.last_at_or_before(ts(2026, 1, 1, 2, 59)) == ts(2025, 12, 31, 3)


def test_a_wall_time_follows_its_zone_across_the_year():
    c = Cron.parse("0 3 * * *", "Europe/Berlin")
    assert utc(c.next_after(ts(2026, 1, 15))) == "2026-01-15 02:00"   # CET, +1
    assert utc(c.next_after(ts(2026, 7, 15))) == "2026-07-15 01:00"   # CEST, +2


def test_spring_forward_a_missing_wall_time_runs_as_if_the_clock_had_not_moved():
    """Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST. 02:30 does not exist that night and
    runs at 03:30 CEST (01:30 UTC), one hour after 01:30 CET; the nights around are normal."""
    c = Cron.parse("30 2 * * *", "Europe/Berlin")
    got = c.ticks(ts(2026, 3, 27), ts(2026, 3, 31), limit=10)
    assert [utc(t) for t in got] == ["2026-03-27 01:30", "2026-03-28 01:30",
                                     "2026-03-29 01:30", "2026-03-30 00:30"]


def test_spring_forward_every_half_hour_keeps_one_tick_per_instant():
    """02:00 and 02:30 CET do not exist; they fall on 03:00 and 03:30 CEST, which are ticks
    anyway: one tick each, 30 minutes apart in real time, none lost, none doubled."""
    c = Cron.parse("*/30 * * * *", "Europe/Berlin")
    got = c.ticks(ts(2026, 3, 28, 23), ts(2026, 3, 29, 3), limit=100)
    assert [utc(t)[11:] for t in got] == ["23:30", "00:00", "00:30", "01:00", "01:30",
                                          "02:00", "02:30", "03:00"]


def test_fall_back_a_repeated_wall_time_runs_once_at_its_first_occurrence():
    """Berlin 2026-10-25: 03:00 CEST becomes 02:00 CET, so 02:30 happens twice; the daily
    tick runs at the first (00:30 UTC), not again an hour later."""
    c = Cron.parse("30 2 * * *", "Europe/Berlin")
    got = c.ticks(ts(2026, 10, 24), ts(2026, 10, 26, 12), limit=10)
    assert [utc(t) for t in got] == ["2026-10-24 00:30", "2026-10-25 00:30",
                                     "2026-10-26 01:30"]
    hourly = Cron.parse("0 * * * *", "Europe/Berlin")
    got = hourly.ticks(ts(2026, 10, 24, 23, 30), ts(2026, 10, 25, 3, 30), limit=10)
    # 02:00 CEST (00:00Z); 02:00 CET (01:00Z) is the repeat: skipped; 03:00 CET; 04:00 CET
    assert [utc(t)[11:] for t in got] == ["00:00", "02:00", "03:00"]


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                                  "UTC"])
@pytest.mark.parametrize("expr", ["*/30 * * * *", "30 2 * * *", "15 1,2,3 * * *"])
def test_the_fast_paths_agree_with_the_slack_walk(zone, expr):
    """Around both clock changes of 2026 (and Lord Howe's half-hour change), the fast paths of
    next_after and last_at_or_before give the same ticks as the slack walk, from any instant."""
    c = Cron.parse(expr, zone)
    for start in (ts(2026, 3, 7), ts(2026, 3, 28), ts(2026, 4, 4), ts(2026, 10, 3),
                  ts(2026, 10, 24), ts(2026, 10, 31)):
        t, walk = start, []
        while True:
            t = c._next_after_walk(t)
            if t > start + 3 * 86400:
                break
            walk.append(t)
        assert walk == sorted(set(walk)) and walk
        assert c.ticks(start, start + 3 * 86400, limit=1000) == walk
        for a, b in zip(walk, walk[1:]):
            assert c.next_after(a) == b
            assert c.last_at_or_before(b - 1) == a
            assert c._last_at_or_before_walk(b - 1) == a
            assert c.next_after((a + b) / 2) == b
            assert c.last_at_or_before((a + b) / 2) == a


def test_catch_up_latest_enqueues_only_the_most_recent_missed_tick():
    c = Cron.parse("0 * * * *", "UTC")
    p = plan(c, "latest", ts(2026, 1, 1, 1), ts(2026, 1, 1, 5, 20))
    assert [utc(t) for t in p.ticks] == ["2026-01-01 05:00"]
    assert utc(p.next_run_at) == "2026-01-01 06:00"


def test_catch_up_all_enqueues_every_missed_tick_bounded_per_step():
    c = Cron.parse("0 * * * *", "UTC")
    p = plan(c, "all", ts(2026, 1, 1, 1), ts(2026, 1, 1, 5, 20))
    assert [utc(t)[11:] for t in p.ticks] == ["01:00", "02:00", "03:00", "04:00", "05:00"]
    assert utc(p.next_run_at) == "2026-01-01 06:00"
    first = plan(c, "all", ts(2026, 1, 1, 1), ts(2026, 1, 1, 5, 20), max_ticks=3)
    assert [utc(t)[11:] for t in first.ticks] == ["01:00", "02:00", "03:00"]
    assert utc(first.next_run_at) == "2026-01-01 04:00"  # still due: the next step goes on
    rest = plan(c, "all", first.next_run_at, ts(2026, 1, 1, 5, 20), max_ticks=3)
    assert [utc(t)[11:] for t in rest.ticks] == ["04:00", "05:00"]
    assert utc(rest.next_run_at) == "2026-01-01 06:00"


def test_catch_up_none_skips_missed_ticks_but_runs_a_tick_found_on_time():
    c = Cron.parse("0 * * * *", "UTC")
    missed = plan(c, "none", ts(2026, 1, 1, 1), ts(2026, 1, 1, 5, 0, 10))
    assert list(missed.ticks) == []
    assert utc(missed.next_run_at) == "2026-01-01 06:00"
    on_time = plan(c, "none", ts(2026, 1, 1, 5), ts(2026, 1, 1, 5) + ON_TIME_S)
    assert [utc(t) for t in on_time.ticks] == ["2026-01-01 05:00"]
    late = plan(c, "none", ts(2026, 1, 1, 5), ts(2026, 1, 1, 5) + ON_TIME_S + 1)
    assert list(late.ticks) == []
    assert utc(late.next_run_at) == "2026-01-01 06:00"


@pytest.mark.parametrize("mode", ["latest", "all", "none"])
def test_a_step_on_the_tick_enqueues_it_and_a_step_before_it_nothing(mode):
    c = Cron.parse("*/5 * * * *", "UTC")
    due = ts(2026, 1, 1, 0, 5)
    assert list(plan(c, mode, due, due - 1).ticks) == []
    assert plan(c, mode, due, due - 1).next_run_at == due
    p = plan(c, mode, due, due)
    assert list(p.ticks) == [due] and p.next_run_at == due + 300


def test_bad_catch_up_is_invalid_argument():
    with pytest.raises(InvalidArgument):
        plan(Cron.parse("* * * * *"), "some", 0.0, 60.0)


def test_tick_key_names_the_schedule_and_the_tick_in_utc():
    assert tick_key("nightly-eval", ts(2026, 12, 3, 2)) == "schedule:nightly-eval:2026-12-03T02:00:00Z"
