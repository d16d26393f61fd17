"""The shared limiter follows what providers say is left (store/ratelimits.py,
core/headroom.py): every backend, time from the injected clock."""

import pytest

from tether import Tether
from tether.core.headroom import Headroom, RateLimit

SCOPE = "openai/gpt-4o-mini"
FOLLOW = [RateLimit(SCOPE)]


def test_calls_granted_after_the_told_call_count_against_its_remaining(store, clock):
    assert store.acquire_rate(FOLLOW, tokens=10, job_id=1, key="a") == 0
    clock.advance(1)
    assert store.acquire_rate(FOLLOW, tokens=10, job_id=2, key="a") == 0, "granted before"
    store.settle_rate(1, "a", 12, headroom=Headroom(requests_remaining=2, requests_reset_s=30),
                      scopes=[SCOPE])
    clock.advance(1)
    assert store.acquire_rate(FOLLOW, tokens=10, job_id=3, key="a") == 0
    clock.advance(1)
    wait = store.acquire_rate(FOLLOW, tokens=10, job_id=4, key="a")
    assert wait == pytest.approx(28.0), "job 2 and 3 were granted after job 1: none left"
    clock.advance(28.5)
    assert store.acquire_rate(FOLLOW, tokens=10, job_id=4, key="a") == 0, "refilled"


def test_tokens_count_by_actual_usage_once_a_call_settles(store, clock):
    store.acquire_rate(FOLLOW, tokens=10, job_id=1, key="a")
    store.settle_rate(1, "a", 10, headroom=Headroom(tokens_remaining=1000, tokens_reset_s=20),
                      scopes=[SCOPE])
    clock.advance(1)
    assert store.acquire_rate(FOLLOW, tokens=800, job_id=2, key="a") == 0
    clock.advance(1)
    assert store.acquire_rate(FOLLOW, tokens=300, job_id=3, key="a") == pytest.approx(18.0)
    store.settle_rate(2, "a", 150)
    assert store.acquire_rate(FOLLOW, tokens=300, job_id=3, key="a") == 0


def test_a_refusals_retry_after_holds_every_call_and_keeps_the_counts(store, clock):
    store.acquire_rate(FOLLOW, tokens=1, job_id=1, key="a")
    store.settle_rate(1, "a", 1, headroom=Headroom(requests_remaining=50, requests_reset_s=60),
                      scopes=[SCOPE])
    clock.advance(1)
    store.acquire_rate(FOLLOW, tokens=1, job_id=2, key="a")
    store.settle_rate(2, "a", None, headroom=Headroom(retry_after_s=5), scopes=[SCOPE])
    assert store.acquire_rate(FOLLOW, tokens=1, job_id=3, key="a") == pytest.approx(5.0)
    ignoring = [RateLimit(SCOPE, from_headers=False)]
    assert store.acquire_rate(ignoring, tokens=1, job_id=3, key="a") == 0
    (shown,) = store.rate_scopes()
    assert (shown.scope, shown.calls, shown.tokens) == (SCOPE, 3, 3)
    assert shown.provider.requests_remaining == 50 and shown.provider.calls_since == 2
    assert shown.provider.retry_at == pytest.approx(clock.time() + 5)


def test_what_one_app_is_told_slows_another_on_the_same_database(database_url, clock):
    a, b = Tether(database_url, clock=clock), Tether(database_url, clock=clock)
    try:
        a.migrate()
        a.store.acquire_rate(FOLLOW, tokens=1, job_id=1, key="a")
        a.store.settle_rate(1, "a", 1, headroom=Headroom(requests_remaining=0,
                                                         requests_reset_s=12), scopes=[SCOPE])
        assert b.store.acquire_rate(FOLLOW, tokens=1, job_id=2, key="a") == pytest.approx(12.0)
        assert [s.scope for s in b.rate_scopes()] == [SCOPE]
    finally:
        a.close()
        b.close()


def test_calls_in_flight_when_a_later_one_was_answered_count_as_not_yet_told(store, clock):
    """Job 1 was granted first but its request reached the provider after job 2's: job 2's
    answer did not count it, so the limiter does."""
    store.acquire_rate(FOLLOW, tokens=10, job_id=1, key="a")
    clock.advance(1)
    store.acquire_rate(FOLLOW, tokens=10, job_id=2, key="a")
    store.settle_rate(2, "a", 10, headroom=Headroom(requests_remaining=2, requests_reset_s=30),
                      scopes=[SCOPE])
    (shown,) = store.rate_scopes()
    assert shown.provider.requests_in_flight == 1
    clock.advance(1)
    assert store.acquire_rate(FOLLOW, tokens=10, job_id=3, key="a") == 0
    clock.advance(1)
    assert store.acquire_rate(FOLLOW, tokens=10, job_id=4, key="a") > 0
