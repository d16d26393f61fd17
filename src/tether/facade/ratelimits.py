"""``Tether``'s shared rate limits: the scopes this app declares, and what the store says of
every scope in use (calls in the last minute, the provider's last headroom).

A part of the facade. Declarations live in the app (``set_rate_limit`` or
``Tether(rate_limits=...)``): each worker enforces what its own app declares. What the store
holds (``store/ratelimits.py``) is shared, so ``tether rate-limits``, ``GET
/api/v1/rate-limits`` and ``/metrics`` show the same scopes from any process.
"""

from __future__ import annotations

import builtins

from ..core.headroom import RateLimit, RateScope
from .host import FacadeHost


class RateLimitsPart(FacadeHost):
    """Declaring and reading shared rate limits (a part of ``Tether``)."""

    rate_limits: dict[str, RateLimit]

    def set_rate_limit(self, scope: str, *, rpm: int | None = None, tpm: int | None = None,
                       from_headers: bool = True) -> None:
        """Share ``rpm``/``tpm`` across every worker of this app: ``scope`` is a provider
        (``"openai"``) or a provider and model (``"openai/gpt-4o"``). Calls wait for capacity.
        With ``from_headers`` (the default) they also wait for what the provider's own
        rate-limit headers last said is left, so a scope declared with neither number
        follows the provider alone (docs/flow-control.md)."""
        self.rate_limits[scope] = RateLimit(scope, rpm, tpm, from_headers)

    def rate_limits_for(self, provider: str, model: str) -> builtins.list[RateLimit]:
        return [lim for scope, lim in self.rate_limits.items()
                if scope in (provider, f"{provider}/{model}")]

    def rate_scopes(self) -> builtins.list[RateScope]:
        """The shared rate-limit scopes in use: calls and tokens granted in the last minute,
        and what each scope's provider last said is left (from the store, so every process
        shows the same)."""
        return self.store.rate_scopes()
