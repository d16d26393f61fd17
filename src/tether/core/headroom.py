"""Headroom: what a provider says is left of its rate limits, and how long a call must wait.

A provider's response tells how many requests and tokens remain before its limit refuses, and
when that count is refilled; a refusal (429) tells how long to stay away (``Retry-After``).
tether keeps the latest of these per rate-limit scope in the store, with the moment the call
that brought it was *granted*: calls granted after that moment are not yet in the provider's
count, so they are subtracted from what it said remains (``wait_s``). Tokens are counted as
each call settles with its actual usage (the reservation until then).

Anthropic states input and output tokens apart as well as together; tether keeps the
smallest remainder (with its refill time) and compares all of a call's tokens with it: it may
slow down a little early, never late. Pure: times are unix seconds given by the caller.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class RateLimit:
    """At most ``rpm`` calls and ``tpm`` tokens a minute under ``scope`` (``openai``, or
    ``openai/gpt-4o``), shared by every worker through the store; with ``from_headers``,
    also no more than the provider's own headers say is left (``wait_s``)."""

    scope: str
    rpm: int | None = None
    tpm: int | None = None
    from_headers: bool = True


@dataclass(frozen=True)
class Headroom:
    """One response's rate-limit headers, read (``providers/headers.py``). Refill times are
    seconds after the response; None: the response did not say."""

    requests_limit: int | None = None
    requests_remaining: int | None = None
    requests_reset_s: float | None = None
    tokens_limit: int | None = None
    tokens_remaining: int | None = None
    tokens_reset_s: float | None = None
    retry_after_s: float | None = None

    @property
    def empty(self) -> bool:
        return self == _EMPTY


_EMPTY = Headroom()


@dataclass(frozen=True)
class ProviderState:
    """A scope's stored headroom, in absolute times, and what was granted since: the row the
    limiter reads (``store/ratelimits.py``) and every interface shows."""

    scope: str
    observed_at: float
    """When the call whose response told this was granted."""
    requests_limit: int | None = None
    requests_remaining: int | None = None
    requests_reset_at: float | None = None
    tokens_limit: int | None = None
    tokens_remaining: int | None = None
    tokens_reset_at: float | None = None
    retry_at: float | None = None
    requests_in_flight: int = 0
    """Calls granted before the told call and not yet answered when it was: they may have
    reached the provider after it, so they count as not yet counted."""
    tokens_in_flight: int = 0
    calls_since: int = 0
    tokens_since: int = 0


def wait_s(state: ProviderState, now: float, tokens: int) -> float:
    """Seconds a call of ``tokens`` must wait under ``state`` (0.0: it may go now). A count
    whose refill time has passed no longer holds anything back."""
    wait = 0.0
    if state.retry_at is not None and state.retry_at > now:
        wait = state.retry_at - now
    if (state.requests_remaining is not None and state.requests_reset_at is not None
            and state.requests_reset_at > now
            and state.calls_since + state.requests_in_flight + 1 > state.requests_remaining):
        wait = max(wait, state.requests_reset_at - now)
    if (state.tokens_remaining is not None and state.tokens_reset_at is not None
            and state.tokens_reset_at > now
            and state.tokens_since + state.tokens_in_flight + tokens
            > state.tokens_remaining):
        wait = max(wait, state.tokens_reset_at - now)
    return wait


def absolute(headroom: Headroom, scope: str, observed_at: float, now: float,
             in_flight: tuple[int, int] = (0, 0)) -> ProviderState:
    """``headroom`` read at ``now`` as a stored state; ``in_flight``: the calls and tokens
    granted before ``observed_at`` and unanswered at ``now``."""
    def at(seconds: float | None) -> float | None:
        return None if seconds is None else now + seconds
    return ProviderState(scope, observed_at, headroom.requests_limit,
                         headroom.requests_remaining, at(headroom.requests_reset_s),
                         headroom.tokens_limit, headroom.tokens_remaining,
                         at(headroom.tokens_reset_s), at(headroom.retry_after_s),
                         *in_flight)


SAME_WINDOW_S = 1.0
"""Two reports whose refill times differ by no more than this speak of one window."""


def merged(old: ProviderState | None, new: ProviderState) -> ProviderState:
    """What to keep when ``new`` arrives, never later to slow down than either report:

    * of two reports of one window (refill times within ``SAME_WINDOW_S``), the fewer
      remaining, counted from the earlier grant (calls do not reach the provider in the order
      they were granted; counting from the earlier one may count a call twice, never none);
    * of two windows, the later-granted call's report (a slow answer to an older call must not
      undo a newer one's);
    * the later ``retry_at``; a refusal that said only ``Retry-After`` keeps the counts."""
    if old is None:
        return new
    retry = max((t for t in (old.retry_at, new.retry_at) if t is not None), default=None)
    if not _counted(new):
        return replace(old, retry_at=retry, calls_since=0, tokens_since=0)
    first, last = sorted((old, new), key=lambda s: s.observed_at)
    if not _counted(old) or not _same_window(old, new):
        return replace(last, retry_at=retry, calls_since=0, tokens_since=0)
    return replace(last, observed_at=first.observed_at, retry_at=retry, calls_since=0,
                   tokens_since=0,
                   requests_remaining=_least(old.requests_remaining, new.requests_remaining),
                   tokens_remaining=_least(old.tokens_remaining, new.tokens_remaining),
                   requests_in_flight=max(old.requests_in_flight, new.requests_in_flight),
                   tokens_in_flight=max(old.tokens_in_flight, new.tokens_in_flight))


def _counted(state: ProviderState) -> bool:
    return state.requests_remaining is not None or state.tokens_remaining is not None


def _same_window(a: ProviderState, b: ProviderState) -> bool:
    for x, y in ((a.requests_reset_at, b.requests_reset_at),
                 (a.tokens_reset_at, b.tokens_reset_at)):
        if x is not None and y is not None:
            return abs(x - y) <= SAME_WINDOW_S
    return False


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


@dataclass(frozen=True)
class RateScope:
    """One shared rate-limit scope as the interfaces show it: the calls and tokens granted in
    the last 60 seconds, and what its provider last said (None: nothing yet)."""

    scope: str
    calls: int
    tokens: int
    provider: ProviderState | None = None
    read_at: float = 0.0
    """When this was read (the store's clock): what ``to_dict``'s ``left`` is reckoned at."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: times as ISO 8601, and what a call may still take now (``left``)."""
        told = None
        if self.provider is not None:
            told = {k: (_iso(v) if k.endswith("_at") else v)
                    for k, v in asdict(self.provider).items() if k != "scope"}
            told.update(left(self.provider, self.read_at))
        return {"scope": self.scope, "calls_last_minute": self.calls,
                "tokens_last_minute": self.tokens, "provider": told}


def left(state: ProviderState, now: float) -> dict[str, Any]:
    """What a call may still take at ``now`` before the provider's refill: ``requests_left``
    and ``tokens_left`` (None where the provider told nothing or the refill has passed), and
    ``retry_in_s``, what a refusal still asks to wait (0.0: nothing)."""
    def rest(remaining: int | None, reset_at: float | None, used: int) -> int | None:
        if remaining is None or reset_at is None or reset_at <= now:
            return None
        return max(0, remaining - used)
    return {"requests_left": rest(state.requests_remaining, state.requests_reset_at,
                                  state.calls_since + state.requests_in_flight),
            "tokens_left": rest(state.tokens_remaining, state.tokens_reset_at,
                                state.tokens_since + state.tokens_in_flight),
            "retry_in_s": max(0.0, (state.retry_at or now) - now)}


def _iso(value: float | None) -> str | None:
    return None if value is None else datetime.fromtimestamp(value, UTC).isoformat()
