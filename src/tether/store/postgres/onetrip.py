"""A call's reservation or settlement in one round trip on PostgreSQL, where nothing needs
deciding in Python.

Written the general way (``Calls.account``, ``group.py``), a reservation or a settlement reads
the job row, its accumulators and its journal rows, decides in Python (``book.py``: the lease,
a cancel, every limit, a key done before, an orphan, an overrun, a threshold crossed) and then
writes: BEGIN, the reads and the writes with COMMIT are round trips of their own, and each
costs the worker and the server CPU. Most calls need none of that deciding: a job without a
parent or limits, in a project without limits, reserving a key it has never journaled, and
settling within what it reserved. For those, ``reserve_call`` and ``settle_call``
(``queries/calls.sql``) are one statement each that checks those conditions under the same locks
and writes what the book would have written, or writes nothing and says so; an autocommit
statement is its own transaction, so one round trip and one commit carry the whole write.

What each call is promised does not change. The conditions are checked in the statement that
writes, with the job row and the job's own accumulator locked, exactly as the general path
locks them; where any fails (a limit set meanwhile, a lost lease, a cancel, a key in the
journal) nothing is written and the operation goes the general way, which decides and
reports it. The reservation has committed before ``account`` returns, so before the
provider is asked. A settlement matches only a row still reserved by its attempt, so it never
applies twice; a crash between the two leaves the row reserved for the orphan path
(``Accounting._settle_orphans``), as before.

Only a write alone takes this way (``CallGroup``: no other job's call arrived while the last
one was written). Calls of several jobs that arrive together still share the general group's
transaction (``group.py``), which adds them to the project's accumulator and totals once: one
statement per call would update those shared rows once per call, and on a busy project the
versions of those few rows, not the round trips, then cost the server the most.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..base import AccountResult, CallEntry, CallReserve, CallSettle
from .retry import translate
from .tx import QUERIES, _bound

_DONE: list[AccountResult] = [(None, None)]


def eligible(ready: dict[int, bool], entry: CallEntry) -> bool:
    """Whether ``entry`` may try the one-statement way: one operation, of a job whose
    accumulators this store has seen and that has no parent (``_call_budgets_ready``)."""
    job_id, _, ops = entry
    return len(ops) == 1 and ready.get(job_id) is False


def params(store: Any, entry: CallEntry, now: float | None) -> tuple[str, dict[str, Any]]:
    """The statement (``reserve_call`` or ``settle_call``) and its parameters for ``entry``."""
    job_id, attempt, (op,) = entry
    if isinstance(op, CallReserve):
        want = op.reservation
        return "reserve_call", {
            "job_id": job_id, "job_key": str(job_id), "attempt": attempt, "key": op.key,
            "stage": op.stage,
            "provider": op.provider, "model": op.model, "request_hash": op.request_hash,
            "fingerprint": op.fingerprint, "reserved_usd": store._money_param(want.cost_usd),
            "reserved_input_tokens": want.input_tokens,
            "reserved_output_tokens": want.output_tokens, "now": now}
    assert isinstance(op, CallSettle)
    usage, price, money = op.usage, op.price, store._money_param
    return "settle_call", {
        "job_id": job_id, "job_key": str(job_id), "attempt": attempt, "key": op.key,
        "status": "failed" if op.refused else "done", "result": op.result_json,
        "usage": store._json_param(usage.to_dict()), "cost_usd": money(price.cost(usage)),
        "error_code": "policy_block" if op.refused else None,
        "error_summary": "refused by the provider" if op.refused else None,
        **store._usage_price_params(usage, price),
        "price_profile": op.profile_id, "now": now}


def write(store: Any, entry: CallEntry) -> list[AccountResult] | None:
    """Write ``entry`` (``eligible``) the one-statement way: ``account``'s result, or None
    when it must go the general way (nothing was written). Raises a failure as a tether
    error (``during_commit``: with no word from the server, it may have committed)."""
    now = store.clock.time() if store.clock is not None else None
    name, values = params(store, entry, now)
    with store._connection() as c:
        try:
            row = c.execute(QUERIES[name], _bound(values)).fetchone()
        except psycopg.Error as exc:
            raise translate(exc, conn=c, during_commit=not getattr(exc, "sqlstate", None)
                            ) from exc
    return _DONE if row is not None and row["applied"] else None
