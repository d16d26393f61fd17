"""Reserve and settle calls, many at once: ``account`` is the one write path of ``ctx.call``.

``account(job_id, attempt, ops)`` applies a list of reservations and settlements of one job in
ONE transaction: the job row (its lease and limits), the job's and the project's accumulators
and the journal rows of every key are read and locked once, each operation is applied in order
to that in-memory book exactly as it would be alone (a reservation sees the ones before it, so
eight concurrent reservations can never overshoot a limit together), and the results are
written once: the two accumulator rows, the journal rows and the ledger rows in one batch
each. An operation that fails (``BudgetExhausted``, a lost lease, a cancel, a duplicate key)
changes nothing and is reported in its own slot; the others still commit.

``reserve`` and ``settle`` are ``account`` with one operation. ``release`` (a call that raised)
is rare and keeps its own transaction. ``_account_jobs`` applies the operations of several jobs
in one transaction the same way (PostgreSQL's group commit of calls, ``postgres/group.py``);
the book itself is ``book.py``.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from ..core.pricing import ModelPrice
from ..core.budget import Reservation
from ..core.usage import Usage
from ..records import JournalEntry, LedgerEntry
from .accounting import Accounting, complete_rows
from .base import AccountResult, CallEntry, CallReserve, CallSettle
from .book import Book, Shared
from .rows import as_decimal, to_ledger
from .totals import count_spend
from .tx import Row, Tx, present


def group_keys(entries: Sequence[CallEntry]) -> tuple[list[int], list[tuple[int, str]]]:
    """What a group's reads are keyed by: its job ids, and its (job id, call key) pairs, both
    sorted (``lock_calls_many``, ``journal_keys_many``)."""
    job_ids = sorted({job_id for job_id, _, _ in entries})
    pairs = sorted({(job_id, op.key) for job_id, _, ops in entries for op in ops})
    return job_ids, pairs


class Calls(Accounting):
    """``account`` and its single-operation forms; ``release`` for a call that raised."""

    def account(self, job_id: int, attempt: int, ops: Sequence[CallReserve | CallSettle], *,
                now: float | None = None) -> list[AccountResult]:
        """Apply ``ops`` (in order) in one transaction. Returns ``(value, error)`` per op: a
        reservation's value is ``None``, or the journal entry of a key already done (nothing
        reserved); a settlement's is ``None`` (its ledger row is in ``ledger()``)."""
        return self._accounted(job_id, attempt, ops, now)[0]

    def _accounted(self, job_id: int, attempt: int, ops: Sequence[CallReserve | CallSettle],
                   now: float | None, read_back: bool = False) -> tuple[list[AccountResult], Any]:
        with self._write() as tx:
            at = self._now(tx, now)
            book = self._open_book(tx, job_id, ops, at)
            outcomes = [book.apply(op, attempt) for op in ops]
            self._write_book(tx, book, at, last=not read_back)
            back = (tx.one("ledger_last", job_id=job_id, key=ops[0].key)
                    if read_back and outcomes[0][1] is None else None)
        return outcomes, back

    def account_many(self, entries: Sequence[CallEntry]) -> list[list[AccountResult]]:
        """``account`` for several jobs at once, in one transaction (a transaction the caller
        has open is joined): ``account``'s result for each entry, in order. Jobs whose
        accumulators exist are read with two statements for all of them and written with one
        batch per table (``_account_jobs``), where each alone would take five or more; the
        rest (a job's first call, a child job, a job named twice) are written one by one, as
        ``account`` writes them, after the group (inside a transaction the caller has open,
        still in it). Each operation is applied exactly as ``account`` applies it and fails
        alone; only a failure of a transaction itself is raised."""
        out: list[list[AccountResult] | None] = [None] * len(entries)
        together = self._groupable(entries)
        if len(together) > 1:
            group = [entries[i] for i in together]
            job_ids, pairs = group_keys(group)
            with self._write() as tx:
                now = self._now(tx, None)
                rows = tx.all("lock_calls_many", job_ids=self._array_param(job_ids),
                              job_keys=self._array_param([str(j) for j in job_ids]))
                read = tx.all("journal_keys_many",
                              job_ids=self._array_param([j for j, _ in pairs]),
                              keys=self._array_param([k for _, k in pairs]))
                results = self._account_jobs(tx, group, rows, read, now, last=False)
            for i, result in zip(together, results, strict=True):
                out[i] = result
        for i, (job_id, attempt, ops) in enumerate(entries):
            if out[i] is None:  # after the group's locks are released (PostgreSQL)
                out[i] = self._accounted(job_id, attempt, ops, None)[0]
        return [present(o) for o in out]

    def _groupable(self, entries: Sequence[CallEntry]) -> list[int]:
        """The positions of the entries a group can read and write together: jobs whose
        accumulators this store has seen and that have no parent, each job once."""
        ready = self._call_budgets_ready()
        seen: set[int] = set()
        out = []
        for i, (job_id, _, _) in enumerate(entries):
            if ready.get(job_id) is False and job_id not in seen:
                seen.add(job_id)
                out.append(i)
        return out

    def reserve(self, job_id: int, attempt: int, *, key: str, stage: str | None, provider: str,
                model: str, reservation: Reservation, request_hash: str | None = None,
                now: float | None = None) -> JournalEntry | None:
        """Reserve the worst case for call ``key``. Returns the journal entry instead, without
        reserving, when the key is already done. Raises ``BudgetExhausted`` (nothing written)
        when a job or project limit would be crossed, ``JobCancelled``/``JobPaused`` when an
        operator stopped the job: no call starts after a cancel is recorded."""
        op = CallReserve(key, stage, provider, model, reservation, request_hash)
        ((value, exc),), _ = self._accounted(job_id, attempt, [op], now)
        if exc is not None:
            raise exc
        return value

    def settle(self, job_id: int, attempt: int, *, key: str, usage: Usage, price: ModelPrice,
               profile_id: str, result_json: str, refused: bool = False,
               now: float | None = None) -> LedgerEntry:
        """Record a completed call: journal ``done``, reservation replaced by the real cost,
        one confirmed ledger row (flagged as an overrun if usage exceeded the estimate, which
        also appends an ``estimate_overrun`` event). A ``refused`` call (a refusal in a billed
        response) is paid but journaled ``failed``, so an operator's retry may ask again."""
        op = CallSettle(key, usage, price, profile_id, result_json, refused)
        ((_, exc),), row = self._accounted(job_id, attempt, [op], now, read_back=True)
        if exc is not None:
            raise exc
        return to_ledger(row)

    def release(self, job_id: int, attempt: int, *, key: str, error_code: str,
                error_summary: str, billed: bool | None, now: float | None = None) -> None:
        """A call that raised. ``billed=False`` (the provider answered with a refusal): the
        reservation is refunded and nothing is spent. Otherwise the outcome is unknown and the
        reservation is counted as spent, unconfirmed, so the ledger never under-reports."""
        with self._write() as tx:
            now = self._now(tx, now)
            job = self._held(tx, job_id, attempt)
            entry = tx.one("journal_get", job_id=job_id, key=key)
            if entry is None or entry["status"] != "reserved" or entry["attempt"] != attempt:
                return
            if billed is False:
                self._adjust(tx, job, now, reserved_usd=-as_decimal(entry["reserved_usd"]),
                             reserved_calls=-1,
                             reserved_input_tokens=-entry["reserved_input_tokens"],
                             reserved_output_tokens=-entry["reserved_output_tokens"])
                tx.run("journal_finish", job_id=job_id, key=key, attempt=attempt,
                       status="failed", result=None, usage=None, cost_usd=None,
                       error_code=error_code, error_summary=error_summary[:2000],
                       now=now)
            else:
                self._settle_orphan(tx, job, entry, now, error=(error_code, error_summary))

    # --- reading and writing books ---------------------------------------------------------------

    def _open_book(self, tx: Tx, job_id: int, ops: Sequence[CallReserve | CallSettle],
                   now: float) -> Book:
        """The job row, both accumulators (locked, job first) and the journal rows of ``ops``'
        keys. Creates missing accumulator rows first (a job's first call)."""
        params = {"job_id": job_id, "job_key": str(job_id)}
        ready = self._call_budgets_ready()
        tree = ready.get(job_id)
        rows = tx.all("lock_calls_tree" if tree else "lock_calls", **params) \
            if tree is not None else []
        if not complete_rows(rows, bool(tree)):
            parent = tx.one("job_parent", job_id=job_id)
            tree = parent is not None and parent["parent_id"] is not None
            tx.run("ensure_call_budgets_tree" if tree else "ensure_call_budgets",
                   job_id=job_id, now=now)
            rows = tx.all("lock_calls_tree" if tree else "lock_calls", **params)
            if complete_rows(rows, tree):
                if len(ready) > 10_000:
                    ready.clear()
                ready[job_id] = tree
        if self._budget_deltas and len(rows) >= 2:
            rows = self._lock_checked(tx, {job_id: rows})[job_id]
        journal: dict[str, Row] = {}
        if len(rows) >= 2:
            keys = list({op.key: None for op in ops})
            for row in tx.all("journal_keys", job_id=job_id, keys=self._list_param(keys)):
                journal[row["key"]] = row
        return Book(self, tx, job_id, rows, journal, now)

    def _account_jobs(self, tx: Tx, entries: Sequence[CallEntry], rows: list[Row],
                      journal: list[Row], now: float,
                      last: bool = True) -> list[list[AccountResult] | None]:
        """The operations of several jobs in ``tx``, which has already locked those jobs'
        rows and their own accumulators and read their journal rows (``rows``: as
        ``lock_calls`` reads them, one job after another with its ``job_id``; ``journal``:
        the rows of the entries' keys). Each job's operations are applied as ``account``
        applies them; every write goes in one batch that carries the COMMIT. An entry whose
        job has no complete rows here (another writer held it, or a budget row is missing)
        gets None and is left for the caller to run alone. One entry per job; ``last``: the
        transaction ends with these writes (they may carry its COMMIT). Books open in
        the order of their projects' period keys (``project@period``): a periodic project
        budget's current row is locked as a book opens."""
        by_job: dict[int, list[Row]] = {}
        for row in rows:
            by_job.setdefault(int(row["job_id"]), []).append(row)
        by_job = {job: got for job, got in by_job.items() if complete_rows(got, False)}
        if self._budget_deltas:
            by_job = self._lock_checked(tx, by_job)
        keys: dict[int, dict[str, Row]] = {}
        for row in journal:
            keys.setdefault(int(row["job_id"]), {})[row["key"]] = row
        shared: Shared = {}
        books: dict[int, Book] = {}
        for job in sorted(by_job, key=lambda job: (by_job[job][0]["job_project"] + "@", job)):
            books[job] = Book(self, tx, job, by_job[job], keys.get(job, {}), now, shared)
        out: list[list[AccountResult] | None] = []
        for job, attempt, ops in entries:
            book = books.get(job)
            out.append(None if book is None else [book.apply(op, attempt) for op in ops])
        self._write_books(tx, list(books.values()), now, last=last)
        return out

    def _write_book(self, tx: Tx, book: Book, now: float, last: bool = False) -> None:
        self._write_books(tx, [book], now, last)

    def _write_books(self, tx: Tx, books: Sequence[Book], now: float,
                     last: bool = False) -> None:
        """Every write of the books, sent together where the backend can (``tx.batch()``:
        one round trip on PostgreSQL instead of one per statement); ``last``: nothing else
        follows in this transaction, so the batch may carry its COMMIT. Accumulators are
        written once each, in (scope, key) order, the lock order of every path."""
        events = [(book.job_id, data) for book in books for data in book.events]
        crossings = [found for book in books for found in book.crossings]
        rounds = max((len(book.journal_writes) for book in books), default=0)
        changed: Shared = {}
        for book in books:
            if book.changed:
                changed.update(zip(book.keys, zip(book.acc, book.deltas, strict=True), strict=True))
        with tx.batch(commit=last and not events and not crossings):
            for n in range(rounds):
                writes = [book.journal_writes[n] for book in books
                          if n < len(book.journal_writes)]
                finishes = [row for done, _ in writes for row in done]
                reserves = [row for _, new in writes for row in new]
                if finishes:
                    tx.many("journal_finish", finishes)
                if reserves:
                    tx.many("journal_reserve", reserves)
            ledger = [row for book in books for row in book.ledger]
            if ledger:
                tx.many("insert_ledger", ledger)
            if changed:  # last: a shared row it adds to stays locked only until COMMIT
                order = sorted(changed)
                self._write_accumulators(tx, order, [changed[k][0] for k in order],
                                         [changed[k][1] for k in order], now)
            count_spend(tx, ledger)
        for job_id, data in events:  # rare (usage above the estimate); each reads its seq
            self._note(tx, job_id, "estimate_overrun", now, data["attempt"], data["event"])
        if crossings:  # rare too: once per threshold of a budget
            self._record_crossings(tx, crossings, now)
