"""The numbers of the wire: id and count bounds, USD limits, money as text, and the check
that a request's number is a JSON number.

Shared by the REST models, the MCP tools' arguments and the spend report, so each bound and
each rule about money is written once.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from ..clock import to_ts, utc
from ..core.validate import MAX_ID, MAX_INT

INT32 = MAX_INT
INT63 = MAX_ID
COUNT_MAX = 2**53 - 1
"""Largest count a budget limit takes: every JSON number up to it is exact, even one a client
wrote as a float, so the document's ``maximum`` and the server agree on the boundary."""
USD_MAX = Decimal(10**12)
_USD_TEXT = r"^[0-9]{1,12}(\.[0-9]{1,18})?$"


def _usd_text(value: Any) -> Any:
    """A USD limit given as text must be plain decimal digits (what the document says)."""
    if isinstance(value, str) and not re.fullmatch(_USD_TEXT, value):
        raise ValueError("a USD amount as text is digits with an optional fraction, e.g. 2.50")
    return value


USD_LIMIT = Annotated[Decimal, BeforeValidator(_usd_text), WithJsonSchema({
    "anyOf": [{"type": "number", "minimum": 0, "maximum": 10**12},
              {"type": "string", "pattern": _USD_TEXT}],
    "description": "USD, at most 10^12: a decimal string (exact) or a number"})]


def _json_number(value: Any) -> Any:
    """A count, a priority or a duration arrives as a JSON number, as the document says:
    pydantic's lax mode would read ``true`` as 1 and ``"5"`` as 5, and a client that sent
    either has a bug the server should name, not guess around. A float with no fraction
    (``5.0``) stays a valid integer, as JSON Schema counts it."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON number, not a boolean or a string")
    return value


JsonNumber = BeforeValidator(_json_number)
"""For the numbers of request bodies and MCP arguments, after their bounds:
``Annotated[int | None, Field(ge=0), JsonNumber]`` (before them, the schema loses the bounds)."""


def money_text(value: Any) -> str | None:
    """Money as plain fixed-point text without trailing zeros (``"0"``, ``"0.0000125"``,
    ``"100"``), never an exponent: SQLite hands back ``0E-7`` where PostgreSQL's numeric says
    ``0.000000``, and clients must see the same digits from either backend."""
    if value is None:
        return None
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError):
        return str(value)
    if not amount.is_finite():
        return str(amount)
    if amount == 0:
        return "0"
    return format(amount.normalize(), "f")


Money = Annotated[str, BeforeValidator(money_text)]
MaybeMoney = Annotated[str | None, BeforeValidator(money_text)]


def _unix_seconds(value: Any) -> Any:
    """A time given as a number is Unix seconds, as in the Python API and the CLI: pydantic
    alone would read one beyond 2e10 (the year 2603) as milliseconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return utc(to_ts(value))
        except ValueError:
            raise ValueError("a time as a number is Unix seconds in the years 1 to 9999"
                             ) from None
    return value


UnixSeconds = BeforeValidator(_unix_seconds)
"""For a request's times: ``Annotated[datetime | None, Field(...), UnixSeconds]``."""
