"""Running totals: what ``/metrics``, ``spend_totals`` and ``engine_stats`` report, counted
in the transaction of the event itself (migration 0018).

Counting the history at read time (every ledger row, every attempt) made a scrape cost time in
proportion to everything the store ever ran: seconds beside millions of rows, on every scrape.
A total written with its event costs one small upsert per batch, and a read sums a few rows.
Totals are Prometheus counters: pruning history does not lower them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from collections.abc import Iterable

from .tx import Row, Tx

CLAIMS = "claims"
LEASE_EXPIRIES = "lease_expiries"
BUDGET_PAUSES = "budget_pauses"


def count_engine(tx: Tx, name: str, n: int, owner: str = "") -> None:
    """Add ``n`` to the ``name`` counter of ``owner`` (a worker counts its claims in a row
    of its own, so workers never wait on each other's counter)."""
    if n:
        tx.run("count_engine", name=name, owner=owner, n=n)


def fold_counters(tx: Tx, owners: Any) -> None:
    """Move the counts of ``owners`` (workers prune just forgot; bound as the backend's
    array) to owner '': the rows deleted are exactly the rows added, in one transaction."""
    folded: dict[str, int] = {}
    for row in tx.all("take_counters", owners=owners):
        folded[row["name"]] = folded.get(row["name"], 0) + int(row["n"])
    for name in sorted(folded):
        count_engine(tx, name, folded[name])


def count_spend(tx: Tx, ledger: Iterable[Row]) -> None:
    """Add ``insert_ledger`` rows to their project, provider and model's totals, one upsert
    per key in key order. Called after the rows' project accumulators were written in the
    same transaction: those row locks already order every writer of a project's totals."""
    totals: dict[tuple[str, str, str], Row] = {}
    for row in ledger:
        key = (row["project"], row["provider"], row["model"])
        t = totals.get(key)
        if t is None:
            t = totals[key] = {"project": key[0], "provider": key[1], "model": key[2],
                               "calls": 0, "input_tokens": 0, "output_tokens": 0,
                               "cost_usd": Decimal(0), "unconfirmed_calls": 0}
        t["calls"] += 1
        t["input_tokens"] += int(row["input_tokens"])
        t["output_tokens"] += int(row["output_tokens"])
        t["cost_usd"] += Decimal(str(row["cost_usd"]))
        t["unconfirmed_calls"] += 0 if row["confirmed"] else 1
    if totals:
        tx.many("count_spend", [dict(totals[k], cost_usd=str(totals[k]["cost_usd"]))
                                for k in sorted(totals)])
