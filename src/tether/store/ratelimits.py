"""Rate limits shared by every worker through the store: a sliding 60-second window per scope.

A scope is a provider (``openai``) or a provider and model (``openai/gpt-4o``). A call is
granted only if, for every scope it falls under, the calls and tokens in the last 60 seconds
plus this one stay within ``rpm``/``tpm``; granting records it in the same transaction, so two
workers cannot both take the last slot. Tokens are counted from the reservation and replaced
by the actual count when the call settles (a refund).
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import RateLimit
from .rows import as_seconds
from .transitions import Transitions
from .tx import present

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

    def settle_rate(self, job_id: int, key: str, tokens: int) -> None:
        """Replace a granted call's reserved tokens with what it actually used."""
        with self._write() as tx:
            tx.run("rate_settle", job_id=job_id, key=key, tokens=tokens)

    def rate_calls(self, scope: str) -> list[float]:
        """Times of the calls granted under ``scope`` still on record (for tests and metrics)."""
        with self._read() as tx:
            return [as_seconds(r["at"]) for r in tx.all("rate_calls", scope=scope)]
