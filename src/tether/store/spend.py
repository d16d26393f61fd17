"""Spend reports from the cost ledger, grouped and summed in the database.

One named statement per backend (``spend_report`` in ``queries/spend.sql``) serves every grouping:
each dimension is switched on or off by a parameter, and a dimension switched off is a
constant NULL, so it does not split groups. The database returns one row per group, never
one per call; money comes back exact (PostgreSQL ``numeric``, SQLite ``tether_decimal_sum``
over the decimal text). Rows are ordered here, in the order of ``by``, so both backends list
them alike whatever their collation or NULL ordering (a group without a value first).
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.spend import SpendQuery, SpendRow
from .rows import as_decimal
from .transitions import Transitions

SortKey = Callable[[SpendRow], tuple[tuple[bool, str], ...]]


def _order(by: tuple[str, ...]) -> SortKey:
    """Rows by their dimensions in the order of ``by``, a missing value (NULL) first."""
    def key(row: SpendRow) -> tuple[tuple[bool, str], ...]:
        return tuple((value is not None, value or "") for value in row.key(by))
    return key


class Spend(Transitions):
    """Grouped totals of the cost ledger."""

    def spend(self, query: SpendQuery) -> list[SpendRow]:
        with self._read() as tx:
            rows = tx.all("spend_report", **query.flags(), tz=query.tz or "UTC",
                          projects=self._list_param(query.projects), since=query.since,
                          until=query.until)
        out = [SpendRow(project=r["project"], provider=r["provider"], model=r["model"],
                        job_type=r["job_type"], stage=r["stage"], day=r["day"], week=r["week"],
                        month=r["month"], calls=int(r["calls"]),
                        unconfirmed_calls=int(r["unconfirmed_calls"] or 0),
                        input_tokens=int(r["input_tokens"] or 0),
                        output_tokens=int(r["output_tokens"] or 0),
                        cost_usd=as_decimal(r["cost_usd"]),
                        reserved_usd=as_decimal(r["reserved_usd"]))
               for r in rows]
        out.sort(key=_order(query.by))
        return out
