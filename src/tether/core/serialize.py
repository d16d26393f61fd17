"""Canonical JSON: one byte form per value, so hashes and idempotency compare meaning, not
layout."""

from __future__ import annotations

import hashlib
import json
import math
import re
from decimal import Decimal
from typing import Any

from ..errors import InvalidPayload

MAX_PAYLOAD_BYTES = 8 * 1024 * 1024


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "to_dict"):
        return value.to_dict()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


# One encoder for every call (json.dumps with options builds a new one each time).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              default=_default, allow_nan=False)


def _check_finite(value: Any, path: str = "$") -> None:
    """Raise ``InvalidPayload`` naming the first NaN, infinity or non-string key in ``value``."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidPayload(f"{path} is {value}; JSON has no NaN or Infinity", path=path)
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidPayload(f"{path} has a non-string key {k!r}", path=path)
            _check_finite(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{path}[{i}]")


# A NUL in a string or key is written as the escape \u0000; an escape starts at a backslash
# that follows an even number of backslashes (``\\u0000`` is a backslash, then "u0000").
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _nul_path(value: Any, path: str = "$") -> str | None:
    """The path of the first string or key in ``value`` that contains NUL."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for k, v in value.items():
            if "\x00" in str(k):
                return f"{path} (a key)"
            found = _nul_path(v, f"{path}.{k}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _nul_path(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _refuse_nul(text: str, value: Any, what: str) -> None:
    """``InvalidPayload`` when the JSON text holds a NUL character: PostgreSQL's jsonb cannot
    store one, and SQLite refuses it too so both backends answer the same input alike."""
    if "\\u0000" in text and _NUL_ESCAPE.search(text):
        path = _nul_path(value) or "$"
        raise InvalidPayload(f"{what} contains a NUL character (\\u0000) at {path}, which "
                             "cannot be stored", path=path)


def _too_deep(what: str) -> InvalidPayload:
    return InvalidPayload(f"{what} is nested too deeply (or contains itself)")


def _walk(value: Any, what: str) -> None:
    """``_check_finite`` with a value too deep to walk refused as such."""
    try:
        _check_finite(value)
    except RecursionError:
        raise _too_deep(what) from None


_READS_BACK_AS_ITSELF = frozenset({int, float, str, bool, type(None)})
"""A scalar the encoder accepted reads back equal (a float in its shortest exact form)."""


def dumps_back(value: Any, *, what: str = "payload",
               limit: int = MAX_PAYLOAD_BYTES) -> tuple[str, Any]:
    """Canonical JSON text of ``value`` and the value that text reads back as (what a later
    read of the stored text returns), or ``InvalidPayload`` that names what is wrong.

    The encoder itself refuses NaN, infinities, cycles and unknown types, but turns a
    non-string key into a string silently; a value that reads back unequal is walked for one
    (a tuple reads back as a list, which is fine). All in C for a valid value: a walk in Python
    of every result and payload cost more than encoding it."""
    try:
        text = _CANONICAL.encode(value)
    except (TypeError, ValueError) as exc:
        _walk(value, what)  # names the path where it can
        raise InvalidPayload(f"{what} is not JSON-serialisable: {exc}") from None
    except RecursionError:
        raise _too_deep(what) from None
    try:
        size = len(text) if text.isascii() else len(text.encode())
    except UnicodeEncodeError:
        raise InvalidPayload(f"{what} is not valid Unicode text (lone surrogates cannot be "
                             "stored)") from None
    if size > limit:
        raise InvalidPayload(f"{what} is {size} bytes; the limit is {limit}",
                             size=size, limit=limit)
    _refuse_nul(text, value, what)
    if value.__class__ in _READS_BACK_AS_ITSELF:
        return text, value
    try:
        back = json.loads(text)
        same = back == value
    except RecursionError:
        raise _too_deep(what) from None
    except Exception:  # noqa: BLE001 - an object whose == raises: walk it like any unequal one
        same = False
    if not same:
        _walk(value, what)
    return text, back


def dumps(value: Any, *, what: str = "payload", limit: int = MAX_PAYLOAD_BYTES) -> str:
    """Canonical JSON text, or ``InvalidPayload`` that names what is wrong."""
    return dumps_back(value, what=what, limit=limit)[0]


def loads(text: str | bytes | None) -> Any:
    return None if text is None else json.loads(text)


def config_hash(config: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a resolved configuration."""
    return hashlib.sha256(dumps(config, what="configuration").encode()).hexdigest()
