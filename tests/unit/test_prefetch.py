"""Fetch-ahead sizing (worker/prefetch.py): pure arithmetic on observed job durations."""

import pytest

from tether.worker.prefetch import Prefetch


def test_nothing_is_held_ahead_before_a_duration_is_known():
    p = Prefetch(8)
    assert p.ahead == 0
    assert p.want(0) == 8 and p.want(5) == 3 and p.want(8) == 0


def test_short_jobs_are_held_ahead_up_to_the_cap_and_claimed_in_batches():
    p = Prefetch(8)
    p.observe(0.0001)
    assert p.ahead == 256  # 32 per slot
    assert p.want(0) == 264
    assert p.want(8 + 256) == 0
    assert p.want(8 + 200) == 0, "less than half the fetch-ahead used: no small claim"
    assert p.want(8 + 128) == 128
    assert p.want(3) == 261, "a free slot is always claimed for"


def test_jobs_that_take_seconds_are_never_held_ahead():
    p = Prefetch(8)
    p.observe(2.0)
    assert p.ahead == 0 and p.want(8) == 0 and p.want(7) == 1


def test_the_horizon_scales_what_is_held():
    p = Prefetch(4, horizon_s=0.05)
    p.observe(0.01)  # 4 slots x 50 ms / 10 ms
    assert p.ahead == 20


def test_the_mean_follows_recent_durations():
    p = Prefetch(8, smoothing=0.5)
    p.observe(0.0001)
    for _ in range(20):
        p.observe(1.0)
    assert p.mean_s == pytest.approx(1.0, rel=1e-3)
    assert p.ahead == 0


def test_max_ahead_zero_disables_and_negative_is_refused():
    p = Prefetch(8, max_ahead=0)
    p.observe(0.0)
    assert p.ahead == 0 and p.want(8) == 0
    with pytest.raises(ValueError):
        Prefetch(8, max_ahead=-1)
