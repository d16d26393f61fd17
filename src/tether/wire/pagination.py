"""Opaque cursors for keyset pagination over jobs (newest first).

A cursor names the position after the last item of a page; clients treat it as an opaque
string. A cursor that does not decode is a 422 ``invalid_argument`` naming ``cursor``: the
schema cannot tell an issued cursor from any other string, so this is not a request shape.
"""

from __future__ import annotations

import base64
import binascii

from .problems import Problem

_PREFIX = "j1:"


def encode(before_id: int) -> str:
    """The cursor for the page of jobs older than ``before_id``."""
    raw = f"{_PREFIX}{before_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str | None) -> int | None:
    """``before_id`` for a cursor (``None`` for the first page)."""
    if cursor is None or cursor == "":
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not raw.startswith(_PREFIX):
            raise ValueError(raw)
        value = int(raw[len(_PREFIX):])
        if not 1 <= value <= 2**63 - 1:
            raise ValueError(raw)
        return value
    except (ValueError, binascii.Error, UnicodeError):
        raise Problem(422, "invalid_argument", "cursor: not a cursor this API issued",
                      argument="cursor", errors=[{"field": "cursor", "in": "query",
                                                  "message": "not a cursor this API issued"}]
                      ) from None
