"""What a provider call is expected to use (``Estimate``) and did use (``Usage``).

Token conventions, whatever the provider: ``input_tokens`` counts every prompt token, including
those read from and written to a prompt cache. Two disjoint subsets of it are priced apart:
``cached_input_tokens`` (read from the cache, billed at the cached rate) and
``cache_write_tokens`` (written to it, billed at the cache-write rate where the provider charges
one: Anthropic's 1.25x input for a 5-minute entry); ``cache_write_1h_tokens`` is the part of
the writes made with a 1-hour lifetime (2x input at Anthropic). ``output_tokens`` counts every
generated token including reasoning (``reasoning_tokens`` is the subset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidPayload


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
                 "cache_write_tokens", "cache_write_1h_tokens")


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0

    def __post_init__(self) -> None:
        for name in _USAGE_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidPayload(f"Usage.{name} must be a non-negative integer, got {value!r}")
        if self.cached_input_tokens + self.cache_write_tokens > self.input_tokens:
            raise InvalidPayload("cached_input_tokens + cache_write_tokens cannot exceed "
                                 "input_tokens (both are parts of the input)")
        if self.cache_write_1h_tokens > self.cache_write_tokens:
            raise InvalidPayload("cache_write_1h_tokens cannot exceed cache_write_tokens")

    def to_dict(self) -> dict[str, int]:
        """Spelled out (no loop, no ``dataclasses.asdict``): every settlement journals one."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_input_tokens": self.cached_input_tokens,
                "reasoning_tokens": self.reasoning_tokens,
                "cache_write_tokens": self.cache_write_tokens,
                "cache_write_1h_tokens": self.cache_write_1h_tokens}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        return cls(**{k: int(v) for k, v in (data or {}).items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Estimate:
    """The worst case a call may use, known before it is made.

    ``input_tokens`` is an upper bound on prompt tokens; without a tokenizer count, pass
    ``input_text`` and its UTF-8 byte length is used, which is provably >= its BPE token
    count. ``max_output_tokens`` must be the limit the request itself sets.
    """

    max_output_tokens: int
    input_tokens: int | None = None
    input_text: str | None = None

    def __post_init__(self) -> None:
        if self.input_tokens is None and self.input_text is None:
            raise InvalidPayload("Estimate needs input_tokens or input_text")
        for name in ("max_output_tokens", "input_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 0):
                raise InvalidPayload(f"Estimate.{name} must be a non-negative integer")

    @property
    def input_upper_bound(self) -> int:
        if self.input_tokens is not None:
            return self.input_tokens
        return len((self.input_text or "").encode("utf-8"))


@dataclass(frozen=True)
class Metered:
    """A call's value together with the usage it was billed for, and optionally the
    response's headers (read for the provider's rate-limit headroom: docs/flow-control.md)."""

    value: Any
    usage: Usage
    headers: Any = None
