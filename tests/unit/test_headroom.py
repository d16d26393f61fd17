"""Reading providers' rate-limit headers (providers/headers.py) and what the limiter makes of
them (core/headroom.py): pure functions, no store."""

import httpx
import pytest

from tether.core.headroom import Headroom, ProviderState, absolute, merged, wait_s
from tether.providers.headers import duration_s, headroom_from


@pytest.mark.parametrize("text,seconds", [
    ("6m0s", 360.0), ("1s", 1.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("7.66s", 7.66),
    ("2", 2.0), ("0", 0.0), ("soon", None), ("5x", None), ("1s junk", None),
])
def test_openai_durations(text, seconds):
    assert duration_s(text) == (None if seconds is None else pytest.approx(seconds))


def test_openai_headers_in_an_httpx_mapping_are_read_case_blind():
    headers = httpx.Headers({
        "X-RateLimit-Limit-Requests": "5000", "x-ratelimit-remaining-requests": "4999",
        "x-ratelimit-reset-requests": "12ms", "x-ratelimit-limit-tokens": "160000",
        "x-ratelimit-remaining-tokens": "159976", "x-ratelimit-reset-tokens": "6m0s"})
    assert headroom_from(headers) == Headroom(5000, 4999, 0.012, 160000, 159976, 360.0)


def test_anthropic_resets_are_measured_from_the_responses_own_date():
    headers = {
        "date": "Thu, 21 Aug 2025 12:40:58 GMT",
        "anthropic-ratelimit-requests-limit": "1000",
        "anthropic-ratelimit-requests-remaining": "999",
        "anthropic-ratelimit-requests-reset": "2025-08-21T12:40:59Z",
        "anthropic-ratelimit-tokens-limit": "96000",
        "anthropic-ratelimit-tokens-remaining": "96000",
        "anthropic-ratelimit-tokens-reset": "2025-08-21T12:41:00Z",
        "anthropic-ratelimit-input-tokens-limit": "80000",
        "anthropic-ratelimit-input-tokens-remaining": "80000",
        "anthropic-ratelimit-input-tokens-reset": "2025-08-21T12:40:59Z",
        "anthropic-ratelimit-output-tokens-limit": "16000",
        "anthropic-ratelimit-output-tokens-remaining": "15000",
        "anthropic-ratelimit-output-tokens-reset": "2025-08-21T12:41:08Z"}
    got = headroom_from(headers, wall_now=0.0)
    assert (got.requests_limit, got.requests_remaining, got.requests_reset_s) == (1000, 999, 1.0)
    assert (got.tokens_limit, got.tokens_remaining, got.tokens_reset_s) == (16000, 15000, 10.0), \
        "the smallest of tokens, input and output tokens remaining, with its own reset"


def test_anthropic_without_a_date_uses_this_machines_clock():
    got = headroom_from({"anthropic-ratelimit-requests-remaining": "3",
                         "anthropic-ratelimit-requests-reset": "1970-01-01T00:01:40Z"},
                        wall_now=90.0)
    assert (got.requests_remaining, got.requests_reset_s) == (3, 10.0)


def test_retry_after_alone_and_nothing_at_all():
    assert headroom_from({"retry-after": "7"}) == Headroom(retry_after_s=7.0)
    assert headroom_from({"retry-after-ms": "250"}) == Headroom(retry_after_s=0.25)
    assert headroom_from({"content-type": "application/json"}) is None
    assert headroom_from(None) is None
    assert headroom_from({"x-ratelimit-remaining-requests": "many"}) is None


def test_wait_counts_calls_and_tokens_granted_since_and_forgets_after_the_reset():
    told = absolute(Headroom(requests_remaining=2, requests_reset_s=10, tokens_remaining=1000,
                             tokens_reset_s=4), "s", observed_at=100.0, now=101.0)
    assert (told.requests_reset_at, told.tokens_reset_at) == (111.0, 105.0)
    assert wait_s(told, 101.0, 500) == 0.0
    two_since = ProviderState(**{**told.__dict__, "calls_since": 2})
    assert wait_s(two_since, 102.0, 10) == 9.0
    assert wait_s(two_since, 111.5, 10) == 0.0, "a count whose refill passed holds nothing"
    spent = ProviderState(**{**told.__dict__, "tokens_since": 800})
    assert wait_s(spent, 102.0, 300) == 3.0
    blocked = ProviderState("s", 100.0, retry_at=107.0)
    assert wait_s(blocked, 102.0, 1) == 5.0


def test_merge_keeps_the_later_granted_calls_counts_and_the_later_retry():
    old = ProviderState("s", 100.0, requests_remaining=5, requests_reset_at=160.0)
    slow = ProviderState("s", 90.0, requests_remaining=9, requests_reset_at=150.0)
    assert merged(old, slow) == old, "a slow answer to an older call undoes nothing"
    refusal = ProviderState("s", 95.0, retry_at=130.0)
    assert merged(old, refusal) == ProviderState("s", 100.0, requests_remaining=5,
                                                 requests_reset_at=160.0, retry_at=130.0)
    newer = ProviderState("s", 110.0, requests_remaining=3, requests_reset_at=170.0)
    assert merged(merged(old, refusal), newer).retry_at == 130.0
    assert merged(None, newer) == newer


def test_two_reports_of_one_window_keep_the_fewer_remaining_from_the_earlier_grant():
    """Calls reach the provider out of grant order: the later-granted call told 3 left, the
    earlier one (which arrived second) told 2."""
    later = ProviderState("s", 101.0, requests_remaining=3, requests_reset_at=160.0,
                          tokens_remaining=900, tokens_reset_at=130.0)
    earlier = ProviderState("s", 100.0, requests_remaining=2, requests_reset_at=160.2,
                            tokens_remaining=950, tokens_reset_at=130.1)
    assert merged(later, earlier) == ProviderState(
        "s", 100.0, requests_remaining=2, requests_reset_at=160.0, tokens_remaining=900,
        tokens_reset_at=130.0)
    assert merged(earlier, later).requests_remaining == 2


def test_where_a_calls_headers_are_found():
    from types import SimpleNamespace

    from tether import Metered, Usage
    from tether.providers.adapters import unwrap
    from tether.providers.headers import response_headers

    metered = Metered({"a": 1}, Usage(input_tokens=1), headers={"retry-after": "2"})
    assert unwrap(metered) == (metered, {"retry-after": "2"})
    raw = SimpleNamespace(headers={"x": "1"}, http_response=object(), parse=lambda: "parsed")
    assert unwrap(raw) == ("parsed", {"x": "1"})
    assert unwrap({"usage": {}}) == ({"usage": {}}, None), "a plain value carries none"
    error = SimpleNamespace(response=SimpleNamespace(headers={"retry-after": "7"}))
    assert response_headers(error) == {"retry-after": "7"}
    assert response_headers(ValueError("no response")) is None
