"""Read usage from whatever a call returned: ``Metered``, an OpenAI chat completion or
response, an Anthropic message, or the same shapes as plain dicts (OpenAI-compatible servers).

The result tether stores is JSON: SDK objects are converted with ``model_dump(mode="json")``.
"""

from __future__ import annotations

from typing import Any

from ..core.usage import Metered, Usage
from ..errors import InvalidPayload


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _int(value: Any) -> int:
    return int(value or 0)


def usage_from(usage: Any) -> Usage | None:
    """Normalise a provider ``usage`` block (object or dict) to ``Usage``; None if unknown."""
    if usage is None:
        return None
    if isinstance(usage, Usage):
        return usage
    if _get(usage, "prompt_tokens") is not None:  # OpenAI chat completions
        details = _get(usage, "prompt_tokens_details")
        out_details = _get(usage, "completion_tokens_details")
        return Usage(input_tokens=_int(_get(usage, "prompt_tokens")),
                     output_tokens=_int(_get(usage, "completion_tokens")),
                     cached_input_tokens=_int(_get(details, "cached_tokens")),
                     reasoning_tokens=_int(_get(out_details, "reasoning_tokens")))
    if _get(usage, "input_tokens") is not None:
        cache_read = _get(usage, "cache_read_input_tokens")
        cache_write = _get(usage, "cache_creation_input_tokens")
        if cache_read is not None or cache_write is not None or (_get(
                usage, "input_tokens_details") is None and _get(usage, "total_tokens") is None):
            # Anthropic: input_tokens excludes cache reads and writes; tether counts all input.
            fresh = _int(_get(usage, "input_tokens"))
            writes = _int(cache_write)
            return Usage(input_tokens=fresh + _int(cache_read) + writes,
                         output_tokens=_int(_get(usage, "output_tokens")),
                         cached_input_tokens=_int(cache_read), cache_write_tokens=writes,
                         cache_write_1h_tokens=min(writes, _int(_get(
                             _get(usage, "cache_creation"), "ephemeral_1h_input_tokens"))))
        details = _get(usage, "input_tokens_details")  # OpenAI responses API
        out_details = _get(usage, "output_tokens_details")
        return Usage(input_tokens=_int(_get(usage, "input_tokens")),
                     output_tokens=_int(_get(usage, "output_tokens")),
                     cached_input_tokens=_int(_get(details, "cached_tokens")),
                     reasoning_tokens=_int(_get(out_details, "reasoning_tokens")))
    return None


def to_json_value(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


def unwrap(raw: Any) -> tuple[Any, Any]:
    """``(value, headers)`` of a call's return value: an SDK raw response (the SDKs'
    ``with_raw_response``) is parsed, and its headers kept; ``Metered`` keeps its own. The
    value of an async raw response is awaitable (the caller awaits it)."""
    if isinstance(raw, Metered):
        return raw, raw.headers
    parse = getattr(raw, "parse", None)
    if callable(parse) and hasattr(raw, "headers") and hasattr(raw, "http_response"):
        return parse(), raw.headers
    return raw, None


def extract(raw: Any) -> tuple[Any, Usage]:
    """(JSON-able value, usage) from a call's return value."""
    if isinstance(raw, Metered):
        return to_json_value(raw.value), raw.usage
    usage = usage_from(_get(raw, "usage"))
    if usage is None:
        raise InvalidPayload(
            f"cannot read token usage from a {type(raw).__name__}; return "
            "Metered(value, Usage(...)) or a provider SDK response that carries usage")
    return to_json_value(raw), usage
