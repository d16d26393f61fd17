"""The drain's polling: fine where the two ends are timed, coarse between them."""

from __future__ import annotations

import pytest

from bench.measure import _next_poll, drain


def test_the_poll_is_fine_until_the_first_completion():
    assert _next_poll(0, 20_000, 0.0, 0.01, 0.1) == 0.01


def test_the_poll_is_coarse_in_the_middle_of_a_drain():
    # 5,000 jobs moved in 0.5 s, 15,000 left: 1.5 s to go
    assert _next_poll(5_000, 15_000, 0.5, 0.01, 0.1) == 0.1


def test_the_poll_is_fine_again_near_the_end():
    # 150 ms left at the rate so far: under two coarse polls
    assert _next_poll(10_000, 1_500, 1.0, 0.01, 0.1) == 0.01


def test_a_wait_is_never_more_than_a_quarter_of_the_time_left():
    # 240 ms left: not yet fine, but the wait (60 ms) leaves the end three polls away
    assert _next_poll(10_000, 2_400, 1.0, 0.01, 0.1) == pytest.approx(0.06)


def test_coarse_no_wider_than_poll_keeps_the_poll_everywhere():
    assert _next_poll(5_000, 15_000, 0.5, 0.05, 0.05) == 0.05


def test_a_drain_polls_less_in_its_middle_and_still_sees_the_end():
    """A steady drain of 1,000 jobs over 0.6 s on an injected clock: far fewer polls than
    one per ``poll`` interval, the end seen within one fine poll, the rate exact."""
    now = 0.0
    polls = 0

    def sleep(seconds: float) -> None:
        nonlocal now
        now += seconds

    def done() -> int:
        nonlocal polls
        polls += 1
        return min(1_000, int(now / 0.0006))

    res = drain(done, 1_000, timeout=10, poll=0.005, coarse=0.1, clock=lambda: now,
                sleep=sleep)
    assert res["done"] == 1_000 and not res["capped"]
    assert polls < 0.6 / 0.005 / 2  # fewer than half the polls of a fixed interval
    assert 0.6 <= res["wall_s"] <= 0.6 + 0.005
    assert res["jobs_per_s"] == pytest.approx(1 / 0.0006, rel=0.02)
