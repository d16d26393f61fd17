"""The transaction handle a backend gives the shared store logic, and how it binds times.

The logic in this package runs named statements (each backend's ``queries/``) through a
``Tx``. Times are always given as unix seconds, under one of the names in ``TIME_PARAMS``;
the backend binds them as its own column type (SQLite keeps the seconds, PostgreSQL binds a
``timestamptz``), so no caller converts a time itself.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar
from collections.abc import Sequence

TIME_PARAMS = frozenset({"now", "at", "since", "until", "before", "cutoff", "claimed_at",
                         "started_at", "run_after", "lease_expires_at", "finished_at", "wake_at",
                         "next_run_at", "last_run_at", "expires_at", "period_start",
                         "observed_at", "requests_reset_at", "tokens_reset_at", "retry_at",
                         "first_tick", "last_tick"})
"""Statement parameters that hold a time (unix seconds, or None)."""

Row = dict[str, Any]
_R = TypeVar("_R")


def present(row: _R | None) -> _R:
    """``row`` where it cannot be missing: the row of a query that always returns one (an
    aggregate, ``now()``, a job locked earlier in the same transaction), or a value another
    one implies. Fails loudly, as indexing ``None`` would, if it is missing after all."""
    assert row is not None, "a row or value that cannot be missing is missing"
    return row


class Tx(Protocol):
    """Named statements inside one transaction (or, from ``_read``, one autocommit each)."""

    def one(self, _q: str, **params: Any) -> Row | None: ...
    def all(self, _q: str, **params: Any) -> list[Row]: ...
    def run(self, _q: str, **params: Any) -> int: ...
    def many(self, _q: str, rows: Sequence[Row]) -> None: ...

    def batch(self, *, commit: bool = False) -> AbstractContextManager[None]:
        """Statements inside may be sent together; their errors surface when it ends.
        ``commit=True``: they are the transaction's last, and the backend may send its COMMIT
        with them (no round trip to the client while their row locks are held)."""
        ...
