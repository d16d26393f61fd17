"""The pure rule of a crossing (``core/thresholds.py``): settled use going from below a
threshold's level to at or above it, each threshold of each limit, nothing for a change that
moves no settled counter; and the event's data matches its published schema."""

from decimal import Decimal

from tether.core.budget import Budget
from tether.core.thresholds import crossed, watched
from tether.wire.thresholds import ThresholdEventData

ZERO = {"spent_usd": Decimal(0), "calls": 0, "input_tokens": 0, "output_tokens": 0}


def used(**changes):
    return dict(ZERO, **changes)


def test_a_jump_past_several_levels_crosses_each_once_lowest_first():
    limits = Budget(max_calls=10, thresholds=[0.8, 0.5, 1])
    got = crossed(limits, used(calls=4), used(calls=10))
    assert [(c.threshold, c.used) for c in got] == [(0.5, 10), (0.8, 10), (1.0, 10)]
    assert crossed(limits, used(calls=5), used(calls=6)) == [], "5 already reached 50 %"
    assert [c.threshold for c in crossed(limits, used(calls=7), used(calls=8))] == [0.8]


def test_money_compares_exactly_and_each_limit_has_its_metric():
    limits = Budget(max_cost_usd="0.3", max_output_tokens=100, thresholds=[0.1])
    got = crossed(limits, used(spent_usd=Decimal("0.029")),
                  used(spent_usd=Decimal("0.03"), output_tokens=10))
    assert [(c.metric, c.limit_name, c.used) for c in got] == [
        ("cost", "max_cost_usd", Decimal("0.03")), ("tokens", "max_output_tokens", 10)]


def test_nothing_is_watched_or_crossed_without_thresholds_and_a_limit():
    assert not watched(Budget(max_calls=3))
    assert not watched(Budget(thresholds=[0.5]))
    assert watched(Budget(max_calls=3, thresholds=[0.5]))
    assert crossed(Budget(max_calls=0, thresholds=[0.5]), used(), used(calls=1)) == []
    assert crossed(Budget(max_calls=2, thresholds=[0.5]), used(calls=1), used(calls=1)) == []


def test_the_event_data_matches_its_schema():
    (c,) = crossed(Budget(max_cost_usd="2", thresholds=[0.5]), used(),
                   used(spent_usd=Decimal("1.25")))
    data = c.event("project", "p", "p", 1796083200.0)
    assert ThresholdEventData.model_validate(data).model_dump() == data
    assert data["limit"] == "2" and data["used"] == "1.25"
