"""Checks on the arguments every interface hands the facade: names, keys, ids, text, flags.

One module, so the library, the CLI, REST and MCP refuse the same input with the same code
(``invalid_argument``, or ``invalid_idempotency_key`` for a key) before anything is stored.
Text may not contain NUL: PostgreSQL cannot store it in text or jsonb, and SQLite must give
the same answer for the same input. Pure functions; each returns the value it accepts.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument, InvalidIdempotencyKey
from .states import JobState

MAX_NAME = 200
MAX_KEY = 200
MAX_ID = 2**63 - 1
MAX_INT = 2**31 - 1
"""The bound of a priority (either way) and of ``max_attempts``: PostgreSQL keeps both as
32-bit integers, and SQLite, which would hold more, must refuse what PostgreSQL cannot."""


def name(value: Any, what: str) -> str:
    """A queue, job type or project name: 1 to 200 printable characters."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} name must be a string, got {type(value).__name__}",
                              argument=what)
    if not value or len(value) > MAX_NAME:
        raise InvalidArgument(f"{what} name must be 1 to {MAX_NAME} characters, got "
                              f"{len(value)}", argument=what)
    if not value.isprintable():
        raise InvalidArgument(f"{what} name {value!r} contains a control or unprintable "
                              "character", argument=what)
    return value


MAX_VERSION = 64


def version(value: Any, what: str = "job type version") -> str:
    """A job type's version: "" (unversioned) or 1 to 64 printable characters without ``@``,
    which separates a type from its version in what a worker serves (``core/serving.py``)."""
    if (not isinstance(value, str) or len(value) > MAX_VERSION or not value.isprintable()
            or "@" in value):
        raise InvalidArgument(f"{what} must be a string of at most {MAX_VERSION} printable "
                              f"characters without '@', got {value!r:.60}", argument="version")
    return value


def signal_name(value: Any) -> str:
    """A signal name: a name (see ``name``) other than ``.`` and ``..``, without ``/``. It is
    one path segment of ``POST /jobs/{id}/signals/{name}``: clients resolve ``.`` and ``..``
    away, and proxies and routers take ``/`` (even as ``%2F``) for a separator, so a job
    waiting for such a name could not be answered over REST or from the dashboard."""
    name(value, "signal")
    if "/" in value or value in (".", ".."):
        raise InvalidArgument(f"signal name {value!r:.60} is not allowed: a signal name is 1 "
                              f"to {MAX_NAME} printable characters other than '/', and not "
                              "'.' or '..'", argument="signal")
    return value


def idempotency_key(value: Any) -> str | None:
    """None, or 1 to 200 visible ASCII characters (no spaces, no control characters)."""
    if value is None:
        return None
    if (not isinstance(value, str) or not 1 <= len(value) <= MAX_KEY
            or not (value.isascii() and value.isprintable()) or " " in value):
        raise InvalidIdempotencyKey(f"idempotency key must be 1 to {MAX_KEY} visible ASCII "
                                    f"characters, got {value!r:.60}")
    return value


def priority(value: Any) -> int:
    """An integer from -(2^31 - 1) to 2^31 - 1 (lower runs first)."""
    if not _integer(value) or not -MAX_INT <= value <= MAX_INT:
        raise InvalidArgument(f"priority must be an integer from {-MAX_INT} to {MAX_INT}, "
                              f"got {value!r:.60}", argument="priority")
    return int(value)


def max_attempts(value: Any) -> int:
    """An integer from 1 to 2^31 - 1."""
    if not _integer(value) or not 1 <= value <= MAX_INT:
        raise InvalidArgument(f"max_attempts must be an integer from 1 to {MAX_INT}, "
                              f"got {value!r:.60}", argument="max_attempts")
    return int(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def text(value: Any, what: str) -> str | None:
    """None, or a string without NUL (a filter, a search, a reason)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string, got {type(value).__name__}",
                              argument=what)
    if "\x00" in value:
        raise InvalidArgument(f"{what} contains a NUL character (\\u0000), which cannot be "
                              "stored or matched", argument=what)
    return value


def texts(**values: Any) -> None:
    """``text`` on each named value."""
    for what, value in values.items():
        text(value, what)


def job_id(value: Any) -> int:
    """A job id: an integer in 1..2^63-1 (a bool or a float is refused, not converted)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            converted = int(value) if isinstance(value, str) else None
        except ValueError:
            converted = None
        if converted is None:
            raise InvalidArgument(f"job id must be an integer, got {value!r:.40}",
                                  argument="job_id")
        value = converted
    if not 1 <= value <= MAX_ID:
        raise InvalidArgument(f"job id must be between 1 and {MAX_ID}, got {value}",
                              argument="job_id")
    return value


def seq(value: Any, what: str = "after") -> int:
    """An event sequence number to read after: an integer in 0..2^63-1."""
    return count(value, what)


def count(value: Any, what: str) -> int:
    """A limit, a cursor or a position: an integer in 0..2^63-1, what both stores' integers
    hold (SQLite read a negative ``LIMIT`` as no limit, PostgreSQL refused it)."""
    if not _integer(value) or not 0 <= value <= MAX_ID:
        raise InvalidArgument(f"{what} must be an integer between 0 and {MAX_ID}, got "
                              f"{value!r:.40}", argument=what)
    return value


def page(before_id: Any, limit: Any) -> None:
    """A list's page: ``before_id`` None or a position, ``limit`` a count (see ``count``)."""
    if before_id is not None:
        count(before_id, "before_id")
    count(limit, "limit")


def state(value: Any) -> str | None:
    """None, or the name of a job state."""
    if value is None:
        return None
    try:
        return str(JobState(value))
    except ValueError:
        known = ", ".join(s.value for s in JobState)
        raise InvalidArgument(f"state must be one of {known}, got {value!r:.40}",
                              argument="state") from None


def flag(value: Any, what: str) -> bool:
    """A true/false switch: only a bool is accepted (``"false"`` is not false)."""
    if not isinstance(value, bool):
        raise InvalidArgument(f"{what} must be true or false, got {value!r:.40}",
                              argument=what)
    return value


ON_CHANGE = ("pause", "reuse", "repay")
"""What a replay may do with a call or stage that changed since it was recorded."""
DECISIONS = ("reuse", "repay")
"""What an operator may decide when resuming a job paused by ``journal_mismatch``."""


def on_change(value: Any, allowed: tuple[str, ...] = ON_CHANGE) -> str | None:
    """A replay policy (``job/replay.py``), or None for the default."""
    if value is not None and value not in allowed:
        raise InvalidArgument(f"on_change must be one of {', '.join(allowed)}, not {value!r}")
    return value


def decision(value: Any) -> str | None:
    """An operator's decision for a job paused by ``journal_mismatch``, or None."""
    return on_change(value, DECISIONS)
