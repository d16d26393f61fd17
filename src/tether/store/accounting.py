"""Budget accounting in the store: the job's and the project's accumulators, calls left open
by an ended attempt (spent in full, unconfirmed), ledger rows, examples and project budgets.
(Reserving and settling calls: ``calls.py``.)

Each write is ONE transaction that touches the job's and the project's accumulators, the call
journal and the cost ledger together, so concurrent calls in one job and concurrent workers
across jobs can never overshoot a limit between a check and a write. Lock order is always job
row, then job budget, then the other accumulators in (scope, key) order.

A shared accumulator (a project's, a parent's) is locked only by a write that checks a limit
against it. Where writers run at once (PostgreSQL, ``_budget_deltas``) call batches add their
differences to the rows they did not lock, so the calls of a project without limits never
queue on its row; every other write locks the rows it reads and writes their values, which
waits for those additions to commit and so cannot lose one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from collections.abc import Sequence

from ..core.budget import COUNTER_FIELDS, Budget, BudgetStatus, Counters
from ..core.thresholds import SETTLED
from ..core.periods import Window, window
from ..core.pricing import ModelPrice
from ..core.usage import Usage
from ..errors import BudgetExhausted
from .rows import as_decimal, counters_of, limits_of
from .thresholds import Thresholds, watches
from .totals import count_spend
from .tx import Row, Tx, present

_D0 = Decimal(0)
_NO_LIMITS = Budget()
PERIOD_SCOPE = "project_period"
"""Accumulators of a periodic project budget, one per period (key ``project@day:2026-12-03``)."""


class Accounting(Thresholds):
    """Accumulators, open calls of ended attempts, ledger rows; examples and project budgets."""

    _budget_deltas = False
    """Call batches write accumulators as differences and lock only the shared rows whose
    limits they check. Off where one writer runs at a time (SQLite): every row it reads is
    current, so it writes values."""

    # --- accumulators --------------------------------------------------------------------

    def _budget(self, tx: Tx, scope: str, key: str, now: float) -> Row:
        tx.run("ensure_budget", scope=scope, key=key, now=now)
        return present(tx.one("lock_budget", scope=scope, key=key))

    def _budget_rows(self, tx: Tx, job: Row, now: float) -> list[Row]:
        """The accumulators a job's spend counts in, locked in (scope, key) order in ONE
        statement: the job's own, its ancestors' (a child draws on its parent's budget) and
        its project's. Rows that do not exist yet are created first (once per job)."""
        tree = job.get("parent_id") is not None
        params = {"job_key": str(job["id"]), "project": job["project"], "job_id": job["id"]}
        lock = "lock_call_budgets_tree" if tree else "lock_call_budgets"
        rows = tx.all(lock, **params)
        if not complete_rows(rows, tree):
            tx.run("ensure_call_budgets_tree" if tree else "ensure_call_budgets",
                   job_id=job["id"], now=now)
            rows = tx.all(lock, **params)
        project = next((r for r in rows if r["scope"] == "project"), None)
        if project is not None:
            period = self._period(tx, project, limits_of(project["limits"]), now)
            if period is not None:
                rows = [*rows, period[0]]
        return rows

    def _period(self, tx: Tx, project: Row, limits: Budget,
                now: float) -> tuple[Row, Window] | None:
        """For a periodic project budget, the current period's accumulator, locked (after the
        project's row: the lock order is scope, then key), and the period. It counts what
        settles in the period; calls in flight are counted by the project's row."""
        if limits.period is None:
            return None
        w = window(now, limits.period, limits.timezone)
        return self._budget(tx, PERIOD_SCOPE, period_key(project["key"], w), now), w

    def _adjust(self, tx: Tx, job: Row, now: float, rows: list[Row] | None = None,
                attempt: int | None = None, **delta: Any) -> None:
        """Add ``delta`` to every accumulator the job's spend counts in (``_budget_rows``).
        ``rows``: those rows already read and locked in this transaction (and not written
        since), so they are not read again. Use settled by attempt ``attempt`` crosses the
        thresholds of the job's and the project's budget (``store/thresholds.py``)."""
        if rows is None:
            rows = self._budget_rows(tx, job, now)
        before = [{name: (as_decimal(row[name]) if name.endswith("_usd") else int(row[name]))
                   for name in COUNTER_FIELDS} for row in rows]
        counters = [{name: value + (0 if row["scope"] == PERIOD_SCOPE
                                    and name.startswith("reserved_") else delta.get(name, 0))
                     for name, value in was.items()} for row, was in zip(rows, before, strict=True)]
        self._write_budget_rows(tx, [(row["scope"], row["key"]) for row in rows], counters, now)
        if any(delta.get(name) for name in SETTLED):
            found = [f for watch, was, now_ in zip(self._watches(tx, job, rows, now), before,
                                                   counters, strict=True)
                     if watch is not None for f in watch.found(was, now_, job["id"], attempt)]
            if found:
                self._record_crossings(tx, found, now)

    def _watches(self, tx: Tx, job: Row, rows: list[Row], now: float) -> list[Any]:
        """The thresholds to watch on ``rows`` (as ``_budget_rows`` reads them): the job's
        limits, its ancestors' (read here: a child's rows carry only its own) and its
        project's, for a periodic budget on the current period's row."""
        project = next((limits_of(r["limits"]) for r in rows if r["scope"] == "project"),
                       _NO_LIMITS)
        w = window(now, project.period, project.timezone) if project.period else None
        own = str(job["id"])
        limits = {own: limits_of(job["budget"])}
        ancestors = [int(r["key"]) for r in rows if r["scope"] == "job" and r["key"] != own]
        if ancestors:
            for row in tx.all("ancestor_limits", ids=self._array_param(ancestors)):
                limits[row["key"]] = limits_of(row["budget"])
        keyed = [(r["scope"], r["key"], limits.get(r["key"], _NO_LIMITS)
                  if r["scope"] == "job" else project) for r in rows]
        return watches(job["project"], keyed, w)

    def _write_budget_rows(self, tx: Tx, keys: Sequence[tuple[str, str]],
                           counters: Sequence[dict[str, Any]], now: float) -> None:
        """Write accumulator rows (each locked in this transaction): ``counters`` holds every
        ``COUNTER_FIELDS`` value of the row named by the same place in ``keys``, money as
        ``Decimal``. Primary-key updates in one batch: cheaper on SQLite than one statement
        choosing each column's value by scope."""
        tx.many("update_budget_row", self._budget_params(keys, counters, now))

    def _write_accumulators(self, tx: Tx, keys: Sequence[tuple[str, str]],
                            values: Sequence[dict[str, Any]], deltas: Sequence[dict[str, Any]],
                            now: float) -> None:
        """A call batch's accumulator writes: ``deltas`` added (``_budget_deltas``), or
        ``values`` written (rows read in this transaction and current)."""
        if not self._budget_deltas:
            self._write_budget_rows(tx, keys, values, now)
            return
        tx.many("add_budget_row", self._budget_params(keys, deltas, now))

    def _budget_params(self, keys: Sequence[tuple[str, str]],
                       counters: Sequence[dict[str, Any]], now: float) -> list[dict[str, Any]]:
        """One row of accumulator counters per key, money bound as the backend stores it."""
        return [dict({name: self._money_param(v) if name.endswith("_usd") else v
                      for name, v in values.items()}, scope=scope, key=key, now=now)
                for (scope, key), values in zip(keys, counters, strict=True)]

    def _lock_checked(self, tx: Tx, jobs: dict[int, list[Row]]) -> dict[int, list[Row]]:
        """Lock the shared accumulators among each job's rows (read unlocked by
        ``lock_calls``) that have limits to check, all in one statement in (scope, key)
        order, and read their values again under the lock."""
        wanted = sorted({(r["scope"], r["key"]) for job, rows in jobs.items() for r in rows
                         if not (r["scope"] == "job" and r["key"] == str(job))
                         and limits_of(r["limits"] if r["scope"] == "project"
                                       else r.get("owner_budget")) != _NO_LIMITS})
        if not wanted:
            return jobs
        fresh = {(r["scope"], r["key"]): r for r in tx.all(
            "lock_budget_keys", scopes=[s for s, _ in wanted], keys=[k for _, k in wanted])}
        return {job: [dict(r, **{name: fresh[(r["scope"], r["key"])][name]
                                 for name in (*COUNTER_FIELDS, "limits")})
                      if (r["scope"], r["key"]) in fresh else r for r in rows]
                for job, rows in jobs.items()}

    def _call_budgets_ready(self) -> dict[int, bool]:
        """Jobs whose accumulator rows this store has created or seen, and whether each is a
        child (its calls also lock its ancestors' rows). A hint: a stale entry only costs the
        ``ensure_call_budgets`` statement it would have skipped."""
        ready = self.__dict__.get("_call_budgets")
        if ready is None:
            ready = self.__dict__.setdefault("_call_budgets", {})
        return ready

    # --- calls an attempt left open ------------------------------------------------------

    def _settle_orphans(self, tx: Tx, job: Row, now: float) -> int:
        rows = tx.all("journal_open", job_id=job["id"])
        for entry in rows:
            self._settle_orphan(tx, job, entry, now)
        return len(rows)

    def _settle_orphan(self, tx: Tx, job: Row, entry: Row, now: float,
                       error: tuple[str, str] | None = None) -> None:
        """A reservation whose outcome is unknown is spent in full, marked unconfirmed."""
        delta, finish, ledger = self._orphan_rows(tx, job, entry, now, error)
        self._adjust(tx, job, now, attempt=entry["attempt"], **delta)
        tx.run("journal_finish", **finish)
        tx.run("insert_ledger", **ledger)
        count_spend(tx, [ledger])

    def _orphan_rows(self, tx: Tx, job: Row, entry: Row, now: float,
                     error: tuple[str, str] | None = None) -> tuple[dict, dict, dict]:
        """What settling an orphan writes — the accumulator delta, the ``journal_finish`` and
        the ``insert_ledger`` parameters — for an attempt's end here and for ``calls.py``."""
        reserved = as_decimal(entry["reserved_usd"])
        usage = Usage(input_tokens=int(entry["reserved_input_tokens"]),
                      output_tokens=int(entry["reserved_output_tokens"]))
        delta = {"reserved_usd": -reserved, "reserved_calls": -1,
                 "reserved_input_tokens": -usage.input_tokens,
                 "reserved_output_tokens": -usage.output_tokens, "spent_usd": reserved,
                 "calls": 1, "input_tokens": usage.input_tokens,
                 "output_tokens": usage.output_tokens}
        code, summary = error or ("unconfirmed", "outcome unknown after the attempt ended")
        finish = {"job_id": job["id"], "key": entry["key"], "attempt": entry["attempt"],
                  "status": "unconfirmed", "result": None, "usage": None,
                  "cost_usd": self._money_param(reserved), "error_code": code,
                  "error_summary": summary[:2000], "now": now}
        price = self._pinned_price(tx, job, entry["provider"], entry["model"]) or ModelPrice(
            entry["provider"], entry["model"], _D0, _D0)
        ledger = self._ledger_params(job, entry, usage, price,
                                     job.get("price_profile") or "unknown", reserved,
                                     confirmed=False, overrun=False, now=now)
        return delta, finish, ledger

    def _ledger_params(self, job: Row, entry: Row, usage: Usage,
                       price: ModelPrice, profile_id: str, cost: Decimal, *, confirmed: bool,
                       overrun: bool, now: float) -> Row:
        """One ``insert_ledger`` row: call ``entry`` of ``job`` paid ``cost`` at ``price``."""
        money = self._money_param
        return {"job_id": job["id"], "project": job["project"], "stage": entry["stage"],
                "key": entry["key"], "attempt": entry["attempt"],
                "provider": entry["provider"], "model": entry["model"],
                **self._usage_price_params(usage, price),
                "price_profile": profile_id, "cost_usd": money(cost),
                "reserved_usd": money(as_decimal(entry["reserved_usd"])), "confirmed": confirmed,
                "overrun": overrun, "now": now}

    def _usage_price_params(self, usage: Usage, price: ModelPrice) -> Row:
        """The ledger's token and price columns, shared by every statement that writes a row."""
        money = self._money_param
        return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                "cached_input_tokens": usage.cached_input_tokens,
                "reasoning_tokens": usage.reasoning_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "cache_write_1h_tokens": usage.cache_write_1h_tokens,
                "input_per_mtok": money(price.input_per_mtok),
                "output_per_mtok": money(price.output_per_mtok),
                "cached_input_per_mtok": money(price.cached_input_per_mtok),
                "cache_write_per_mtok": money(price.cache_write_per_mtok),
                "cache_write_1h_per_mtok": money(price.cache_write_1h_per_mtok)}

    # --- examples and project budgets ----------------------------------------------------

    def add_examples(self, job_id: int, attempt: int, n: int, *, now: float | None = None) -> int:
        """Count ``n`` produced examples against ``max_examples`` (job and project)."""
        with self._write() as tx:
            now = self._now(tx, now)
            job = self._held(tx, job_id, attempt)
            rows = self._budget_rows(tx, job, now)
            own = next(r for r in rows if r["scope"] == "job" and r["key"] == str(job_id))
            project = next(r for r in rows if r["scope"] == "project")
            for scope, row, limits in (("job", own, limits_of(job["budget"])),
                                       ("project", project, limits_of(project["limits"]))):
                have = int(row["examples"])
                cap = None if limits.soft else limits.max_examples
                if cap is not None and have + n > cap:
                    raise BudgetExhausted(f"{scope} limit max_examples ({limits.max_examples}) "
                                          f"would be crossed", limit="max_examples", scope=scope)
            self._adjust(tx, job, now, rows, examples=n)
            return int(own["examples"]) + n

    def project_budget(self, project: str, *, now: float | None = None) -> BudgetStatus:
        """A project's limits and all-time use; for a periodic budget also the current
        period's use and bounds (by the store's clock)."""
        with self._read() as tx:
            row = tx.one("project_budget", key=project)
            if row is None:
                return BudgetStatus()
            limits = limits_of(row["limits"])
            if limits.period is None:
                return BudgetStatus(limits, counters_of(row))
            w = window(self._now(tx, now), limits.period, limits.timezone)
            period = tx.one("budget_row", scope=PERIOD_SCOPE, key=period_key(project, w))
        return BudgetStatus(limits, counters_of(row),
                            period_used=counters_of(period) if period else Counters(),
                            period_start=w.start, period_end=w.end)

    def set_project_budget(self, project: str, changes: Budget, *,
                           replace: bool = False) -> BudgetStatus:
        """Change a project's limits: those ``changes`` sets, the others kept; with
        ``replace`` the limits become exactly ``changes`` (what it leaves out is unlimited).

        A budget that becomes periodic, or whose period or time zone changes, counts from the
        start of its current period, not from the moment it is set: the period's accumulator
        is recounted from the ledger (``_recount_period``) in the same transaction."""
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._budget(tx, "project", project, now)  # locked: concurrent edits serialise
            current = limits_of(row["limits"])
            merged = changes if replace else current.merged(changes)
            tx.run("set_budget_limits", scope="project", key=project,
                   limits=self._json_param(merged.to_dict()), now=now)
            if merged.period is not None and _calendar(merged) != _calendar(current):
                self._recount_period(tx, project, merged, now)
        return self.project_budget(project)

    def _recount_period(self, tx: Tx, project: str, limits: Budget, now: float) -> None:
        """Write the current period's accumulator from the ledger: the calls of ``project``
        that settled in the period so far (rows a fork carried are not calls made: they are
        left out, as every budget leaves them out). Called with the project's row locked: a
        call checked against the project's limits waits for the recount, then counts in its
        row. (On PostgreSQL a call of a project that had no limits takes no such lock; one
        settling at the very moment its first limits are set counts in all-time use only.)

        Reservations open now are not in the period's row: they count against its limits
        from the project's row at once (``in_period``) and in the period when they settle.
        Examples have no dated record: the row keeps those it counted (none if new). Calls
        of jobs pruned earlier in the period are no longer in the ledger and not counted."""
        w = window(now, present(limits.period), limits.timezone)
        key = period_key(project, w)
        row = self._budget(tx, PERIOD_SCOPE, key, now)
        settled = present(tx.one("period_ledger", project=project, since=w.start, until=w.end))
        counters: dict[str, Any] = dict.fromkeys(COUNTER_FIELDS, 0)
        counters.update(spent_usd=as_decimal(settled["spent_usd"]), reserved_usd=_D0,
                        calls=int(settled["calls"]),
                        input_tokens=int(settled["input_tokens"] or 0),
                        output_tokens=int(settled["output_tokens"] or 0),
                        examples=int(row["examples"]))
        self._write_budget_rows(tx, [(PERIOD_SCOPE, key)], [counters], now)


def period_key(project: str, w: Window) -> str:
    """The key of ``project``'s accumulator for period ``w`` (``gamma@day:2026-12-03``)."""
    return f"{project}@{w.label}"


def _calendar(limits: Budget) -> tuple[str | None, str]:
    """What decides a periodic budget's windows: its period and time zone."""
    return limits.period, limits.timezone or "UTC"


def complete_rows(rows: Sequence[Row], tree: bool) -> bool:
    """Are all of a job's accumulator rows there (its own, its project's, and for a child,
    each ancestor's: the ``*_tree`` statements count them)?"""
    if len(rows) < 2:
        return False
    return not tree or len(rows) >= 2 + int(rows[0]["ancestors"])


def in_period(project: Counters, period: Counters) -> Counters:
    """What a periodic project limit is checked against: the period's settled use plus every
    call of the project in flight now (reservations are not split by period)."""
    return Counters(spent_usd=period.spent_usd, reserved_usd=project.reserved_usd,
                    calls=period.calls, reserved_calls=project.reserved_calls,
                    input_tokens=period.input_tokens, output_tokens=period.output_tokens,
                    reserved_input_tokens=project.reserved_input_tokens,
                    reserved_output_tokens=project.reserved_output_tokens,
                    examples=period.examples)
