"""Database URLs as messages name them: never with a password."""

from __future__ import annotations


def redact(url: str) -> str:
    """``url`` without its password (``postgresql://user:***@host/db``), for errors and logs."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in creds:
        return url
    return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
