"""Group commit of calls on PostgreSQL: the reservations and settlements of many jobs in one
transaction.

A job's calls already share transactions (``job/batching.py``), but a worker running many jobs
that each make one call at a time (an LLM pipeline: one call in flight per job) writes each
reservation and each settlement in a transaction of its own: a BEGIN, the locking read, the
journal read, the writes and a COMMIT for every one of them. ``CallGroup`` combines the
``account`` calls of the worker's jobs that arrive while one is being written (a
``core.combining.Combiner``: no thread of its own; a call alone is written at once) and
writes them in one transaction: BEGIN, ``now()``, the locking read of every job
(``lock_calls_many``) and the journal read (``journal_keys_many``) go in one simple-protocol
message, their values bound client-side, then every write with the COMMIT in one batch
(``Calls._account_jobs``): two round trips and one commit for the whole group. One job alone
reads with its prepared ``lock_calls`` instead, in round trips of their own: planning it
afresh each time cost a lone call more than the round trips saved. (psycopg's pipeline mode
would save the reads' round trips too, but cost the worker more CPU than it saved, and on a
busy machine the CPU is what runs out.)

A call written alone with nothing to decide (one operation of a job without parent or
limits, in a project without limits) is one statement instead, one round trip, when the
statement allows it (``onetrip.py``); a group of several keeps the way above, which adds to
shared rows once for all of them.

What each call is promised does not change: its reservation has committed before ``account``
returns, so before the provider is asked; its limits are checked in the transaction that
writes it, against every reservation before it in that transaction, of any job; an operation
that fails (a budget refusal, a lost lease) changes nothing and fails alone.

Lock order: job rows in id order with SKIP LOCKED (a job row another transaction holds is
left out, never waited for), then the jobs' own accumulators, then the shared accumulators
with limits in (scope, key) order, and the writes add to accumulators in (scope, key) order.
A job left out (its row held elsewhere, its accumulators not created yet, or a child job,
whose calls also lock its ancestors' rows) has its calls written alone after the group, as
``account`` writes them everywhere else. If the group transaction fails before its COMMIT,
nothing of it happened and each job's calls are written alone, so one job's failure cannot
fail its neighbours.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

import psycopg

from ...core.combining import Combiner
from ...errors import TetherError
from ..base import AccountResult, CallEntry, CallReserve, CallSettle
from ..calls import group_keys
from ..sql import SQLStore
from ..tx import present
from . import onetrip
from .retry import TransientStoreError, translate
from .tx import QUERIES, PgTx

_Outcome = tuple[list[AccountResult] | None, BaseException | None]


class CallGroup(Combiner):
    """``submit((job_id, attempt, ops))`` returns ``account``'s result for those ops once the
    transaction that wrote them has committed."""

    def __init__(self, store: SQLStore, *, max_batch: int = 128) -> None:
        super().__init__(max_batch=max_batch)
        self._store = store

    def _flush(self, entries: Sequence[CallEntry]) -> list[_Outcome]:
        store = self._store
        out: list[_Outcome | None] = [None] * len(entries)
        if len(entries) == 1 and onetrip.eligible(store._call_budgets_ready(), entries[0]):
            self._one_trip(entries[0], out)
        together = [i for i in store._groupable(entries) if out[i] is None]
        if together:
            try:
                results = self._together([entries[i] for i in together])
            except TransientStoreError as exc:
                if not exc.during_commit:
                    raise
                for i in together:  # the COMMIT's outcome is unknown: never write them again
                    out[i] = (None, exc)
            except TetherError:
                pass  # rolled back: each job's calls are written alone below
            else:
                for i, result in zip(together, results, strict=True):
                    if result is not None:
                        out[i] = (result, None)
        for i, (job_id, attempt, ops) in enumerate(entries):
            if out[i] is None:
                try:
                    out[i] = (store._accounted(job_id, attempt, ops, None)[0], None)
                except BaseException as exc:  # noqa: BLE001 - this entry's own failure
                    out[i] = (None, exc)
        return [present(o) for o in out]

    def _one_trip(self, entry: CallEntry, out: list[_Outcome | None]) -> None:
        """Write a lone ``entry`` the one-statement way (``onetrip.py``) if it allows it."""
        try:
            result = onetrip.write(self._store, entry)
        except TransientStoreError as exc:
            if exc.during_commit:  # the outcome is unknown: never write it again
                out[0] = (None, exc)
        except TetherError:
            pass  # rolled back: written the general way below
        else:
            if result is not None:
                out[0] = (result, None)

    def _together(self, entries: Sequence[CallEntry]) -> list[list[AccountResult] | None]:
        """One transaction for ``entries`` (one per job): see the module's docstring."""
        store: Any = self._store
        with store._connection() as c:
            try:
                now, rows, read = _read(c, entries, store.clock)
            except psycopg.Error as exc:
                raise translate(exc, conn=c) from exc
            tx = PgTx(c, started_at=now)
            results = store._account_jobs(tx, entries, rows, read, now)
            if not tx.committed:  # an event was appended after the batch
                try:
                    c.execute("COMMIT")
                except psycopg.Error as exc:
                    raise translate(exc, conn=c, during_commit=True) from exc
        return results


def _read(c: Any, entries: Sequence[CallEntry],
          clock: Any) -> tuple[float, list[Any], list[Any]]:
    """BEGIN, the transaction's time, and a group's locking and journal reads. One job alone:
    ``lock_calls`` (prepared, as any statement is: its plan does not change with the tables'
    sizes) and ``journal_keys`` (``tx.PLANNED_EACH_TIME``), each its own round trip. Several
    jobs: ``lock_calls_many`` and ``journal_keys_many``, planned each time anyway, go in the
    same simple-protocol message as BEGIN and ``now()``, their values bound client-side: one
    round trip for all of it."""
    head = "BEGIN; SELECT now() AS now" if clock is None else "BEGIN"
    if len(entries) == 1:
        job_id, _, ops = entries[0]
        now = _began(c.execute(head), clock)
        lock = c.execute(QUERIES["lock_calls"], {"job_id": job_id, "job_key": str(job_id)})
        journal = c.execute(QUERIES["journal_keys"],
                            {"job_id": job_id, "keys": sorted({op.key for op in ops})},
                            prepare=False)
        return (now, [dict(row, job_id=job_id) for row in lock.fetchall()],
                [dict(row, job_id=job_id) for row in journal.fetchall()])
    job_ids, pairs = group_keys(entries)
    literal = psycopg.ClientCursor(c).mogrify
    lock_sql = literal(QUERIES["lock_calls_many"],
                       {"job_ids": job_ids, "job_keys": [str(j) for j in job_ids]})
    read_sql = literal(QUERIES["journal_keys_many"], {"job_ids": [j for j, _ in pairs],
                                                      "keys": [k for _, k in pairs]})
    cur = c.execute(f"{head}; {lock_sql}; {read_sql}", prepare=False)
    now = _began(cur, clock)
    cur.nextset()
    rows = cur.fetchall()
    cur.nextset()
    return now, rows, cur.fetchall()


def _began(cur: Any, clock: Any) -> float:
    """The transaction's time: ``now()`` from the result after BEGIN's, or the injected
    clock's (``cur`` is then left on BEGIN's result)."""
    if clock is None:
        cur.nextset()
        return present(cur.fetchone())["now"].timestamp()
    return clock.time()


class GroupedCalls(SQLStore):
    """``account`` through the store's ``CallGroup``: concurrent calls of different jobs
    share a transaction."""

    def account(self, job_id: int, attempt: int, ops: Sequence[CallReserve | CallSettle], *,
                now: float | None = None) -> list[AccountResult]:
        """As ``Calls.account``. An explicit ``now`` (tests) writes alone: a transaction has
        one time."""
        if now is not None:
            return super().account(job_id, attempt, ops, now=now)
        group = self.__dict__.get("_call_group")
        if group is None:
            group = self.__dict__.setdefault("_call_group", CallGroup(self))
        result: list[AccountResult] = group.submit((job_id, attempt, ops))
        return result
