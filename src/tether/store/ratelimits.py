"""Rate limits shared by every worker through the store: a sliding 60-second window per scope.

A scope is a provider (``openai``) or a provider and model (``openai/gpt-4o``). A call is
granted only if, for every scope it falls under, the calls and tokens in the last 60 seconds
plus this one stay within ``rpm``/``tpm``; granting records it in the same transaction, so two
workers cannot both take the last slot. Tokens are counted from the reservation and replaced
by the actual count when the call settles (a refund).

A scope that follows its provider's headers (``RateLimit.from_headers``, the default) also
waits for what the provider last said is left (``core/headroom.py``): settling a call stores
its response's headroom in the same transaction, under the scope's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.headroom import Headroom, ProviderState, RateScope, absolute, merged, wait_s
from .base import RateLimit
from .rows import as_seconds
from .transitions import Transitions
from .tx import Row, present

__all__ = ["WINDOW_S", "RateLimit", "RateLimits"]

WINDOW_S = 60.0


class RateLimits(Transitions):
    """Granting calls under shared limits."""

    def acquire_rate(self, limits: Sequence[RateLimit], *, tokens: int, job_id: int, key: str,
                     now: float | None = None) -> float:
        """Take one call of ``tokens`` under every limit, or take nothing and return how many
        seconds to wait before capacity can exist (0.0 means granted)."""
        with self._write() as tx:
            now = self._now(tx, now)
            since = now - WINDOW_S
            wait = 0.0
            for limit in sorted(limits, key=lambda x: x.scope):
                tx.one("rate_lock", scope=limit.scope)
                if limit.from_headers:
                    state = _state(tx.one("rate_headroom", scope=limit.scope))
                    if state is not None:
                        wait = max(wait, wait_s(state, now, tokens))
                win = present(tx.one("rate_window", scope=limit.scope, since=since))
                calls, used = int(win["calls"]), int(win["tokens"])
                over_calls = limit.rpm is not None and calls + 1 > limit.rpm
                over_tokens = limit.tpm is not None and used + tokens > limit.tpm
                if not (over_calls or over_tokens):
                    continue
                if limit.tpm is not None and tokens > limit.tpm:
                    raise ValueError(f"a call of {tokens} tokens can never fit tpm={limit.tpm} "
                                     f"of {limit.scope}")
                rows = tx.all("rate_oldest_until", scope=limit.scope,
                              since=since)
                # The earliest moment enough old calls have left the window.
                free_calls = calls + 1 - (limit.rpm or calls + 1)
                free_tokens = used + tokens - (limit.tpm or used + tokens)
                dropped_tokens, until = 0, now
                for dropped_calls, r in enumerate(rows):
                    if dropped_calls >= free_calls and dropped_tokens >= free_tokens:
                        break
                    dropped_tokens += int(r["tokens"])
                    until = as_seconds(r["at"]) + WINDOW_S
                wait = max(wait, until - now, 0.001)
            if wait > 0:
                return wait
            for limit in limits:
                tx.run("rate_insert", scope=limit.scope, now=now, tokens=tokens,
                       job_id=job_id, key=key)
            tx.run("rate_prune", before=now - 2 * WINDOW_S)
            return 0.0

    def settle_rate(self, job_id: int, key: str, tokens: int | None, *,
                    headroom: Headroom | None = None, scopes: Sequence[str] = ()) -> None:
        """Mark a granted call answered, its reserved tokens replaced with what it actually
        used (None: kept, for a call that failed), and store the ``headroom`` its response or
        error told for each of ``scopes``."""
        scopes = sorted(scopes) if headroom is not None else []
        with self._write() as tx:
            for scope in scopes:  # the order acquire_rate takes them in
                tx.one("rate_lock", scope=scope)
            tx.run("rate_settle", job_id=job_id, key=key, tokens=tokens)
            if headroom is None:
                return
            now = self._now(tx, None)
            for scope in scopes:
                granted = tx.one("rate_granted_at", job_id=job_id, key=key, scope=scope)
                at = as_seconds(granted["at"]) if granted else now
                flying = present(tx.one("rate_in_flight", scope=scope, at=at,
                                        since=now - WINDOW_S))
                told = absolute(headroom, scope, at, now,
                                (int(flying["calls"]), int(flying["tokens"])))
                keep = merged(_state(tx.one("rate_headroom", scope=scope)), told)
                tx.run("rate_headroom_save", now=now, **_row(keep))

    def rate_scopes(self, *, now: float | None = None) -> list[RateScope]:
        """Every scope with calls in the last 60 seconds or a stored headroom."""
        with self._read() as tx:
            now = self._now(tx, now)
            return [RateScope(r["scope"], int(r["calls"]), int(r["tokens"]),
                              _state(tx.one("rate_headroom", scope=r["scope"])), now)
                    for r in tx.all("rate_scopes", since=now - WINDOW_S)]

    def rate_calls(self, scope: str) -> list[float]:
        """Times of the calls granted under ``scope`` still on record (for tests and metrics)."""
        with self._read() as tx:
            return [as_seconds(r["at"]) for r in tx.all("rate_calls", scope=scope)]


_COUNTS = ("requests_limit", "requests_remaining", "tokens_limit", "tokens_remaining",
           "requests_in_flight", "tokens_in_flight")
_TIMES = ("requests_reset_at", "tokens_reset_at", "retry_at")


def _state(row: Row | None) -> ProviderState | None:
    if row is None:
        return None
    values: dict[str, Any] = {k: None if row[k] is None else int(row[k]) for k in _COUNTS}
    values.update({k: as_seconds(row[k]) for k in _TIMES})
    return ProviderState(row["scope"], as_seconds(row["observed_at"]),
                         calls_since=int(row["calls_since"]),
                         tokens_since=int(row["tokens_since"]), **values)


def _row(state: ProviderState) -> dict[str, Any]:
    return {"scope": state.scope, "observed_at": state.observed_at,
            **{k: getattr(state, k) for k in (*_COUNTS, *_TIMES)}}
