"""A book: one transaction's view of one job's calls, applied in memory and written once.

``Calls.account`` opens a book per job (the job row, the accumulators its calls count in, the
journal rows of the batch's keys), applies each reservation and settlement to it in order
exactly as it would be applied alone, and writes what the book collected. Books of several
jobs in one transaction (``postgres/group.py``) share the accumulator rows they have in
common (``Shared``): a reservation of one job sees every reservation before it in the same
transaction, of any job, so concurrent jobs can never overshoot a shared limit together.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..core.budget import COUNTER_FIELDS, Budget, Counters, Reservation, exceeded_limit
from ..core.thresholds import SETTLED
from ..core.periods import local_time
from ..core.states import JobState
from ..errors import BudgetExhausted, JobCancelled, JobPaused, LeaseLost, TetherError
from ..records import JournalEntry
from .accounting import PERIOD_SCOPE, Accounting, in_period
from .base import AccountResult, CallReserve, CallSettle
from .rows import as_decimal, as_seconds, limits_of, to_journal
from .thresholds import Found, Watch, watches
from .tx import Row, Tx, present

_NO_LIMITS = Budget()
_USD = ("spent_usd", "reserved_usd")
_COUNTS = tuple(name for name in COUNTER_FIELDS if name not in _USD)

Shared = dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]
"""Accumulators by ``(scope, key)``: the value as read and changed so far, and the change
alone (what a batch adds where it writes differences)."""


class Book:
    """One job's calls in one transaction: applied in memory, written once."""

    def __init__(self, store: Accounting, tx: Tx, job_id: int, rows: list[Row],
                 journal: dict[str, Row], now: float, shared: Shared | None = None) -> None:
        self.store, self.tx, self.job_id, self.now = store, tx, job_id, now
        self.job: Row | None = None
        self.watch: list[tuple[int, Watch]] = []
        """The accumulators whose thresholds a settlement may cross, by place in ``keys``."""
        if len(rows) >= 2:
            own_key = str(job_id)
            own = next(r for r in rows if r["scope"] == "job" and r["key"] == own_key)
            project = next(r for r in rows if r["scope"] == "project")
            ancestors = [r for r in rows if r["scope"] == "job" and r["key"] != own_key]
            self.job = {"id": job_id, "project": own["job_project"], "state": own["job_state"],
                        "lease_attempt": own["lease_attempt"], "budget": own["budget"],
                        "price_profile": own["price_profile"]}
            ordered = [own, *ancestors, project]
            self.limits = [limits_of(own["budget"]),
                           *[limits_of(r.get("owner_budget")) for r in ancestors],
                           limits_of(project["limits"])]
            self.window = None
            period = store._period(tx, project, self.limits[-1], now)
            if period is not None:
                ordered.append(period[0])
                self.window = period[1]
            self.keys = [(r["scope"], r["key"]) for r in ordered]
            """Every accumulator a call counts in: the job's, its ancestors', its project's
            and, for a periodic project budget, its project's current period's."""
            shared = {} if shared is None else shared
            for key, row in zip(self.keys, ordered, strict=True):
                if key not in shared:
                    shared[key] = (_accumulator(row), _zero())
            self.acc = [shared[key][0] for key in self.keys]
            self.deltas = [shared[key][1] for key in self.keys]
            each = [*self.limits, self.limits[-1]][:len(self.keys)]  # a period: the project's
            self.watch = [(i, w) for i, w in enumerate(watches(
                own["job_project"], [(scope, key, limits) for (scope, key), limits
                                     in zip(self.keys, each, strict=True)],
                self.window)) if w is not None]
        self.journal = journal
        self.changed = False
        self.journal_writes: list[tuple[list[Row], list[Row]]] = []
        """``(finishes, reserves)`` per round: a key's n-th journal write goes in round n, so
        writes of one key keep the order of the ops and writes of many keys stay batched."""
        self._rounds: dict[str, int] = {}
        self.ledger: list[Row] = []
        self.events: list[dict[str, Any]] = []
        self.crossings: list[Found] = []
        self._first_start: Any = ()
        self._token: int | None = None

    def apply(self, op: CallReserve | CallSettle, attempt: int) -> AccountResult:
        self._token = attempt
        try:
            if isinstance(op, CallReserve):
                return self._reserve(op, attempt), None
            self._settle(op, attempt)
            return None, None
        except (TetherError, BudgetExhausted, JobCancelled, JobPaused, LeaseLost) as exc:
            return None, exc

    # --- reserve -----------------------------------------------------------------------------

    def _running(self, attempt: int) -> None:
        """Raise unless attempt ``attempt`` holds the job and it is running (not stopping)."""
        job = self._held(attempt)
        if job["state"] == JobState.CANCELLING:
            raise JobCancelled(f"job {self.job_id} was cancelled")
        if job["state"] == JobState.PAUSING:
            raise JobPaused(f"job {self.job_id} was paused")
        if job["state"] != JobState.RUNNING:
            raise LeaseLost(f"job {self.job_id} is {job['state']}, not running")

    def reserve_batch(self, want: Reservation, attempt: int) -> None:
        """Reserve a provider batch's worst case (``want``: its items' summed, ``calls``:
        how many) against every limit the job's calls count in: all of it, or nothing."""
        self._running(attempt)
        self._check(want)
        self._add(reserved_usd=want.cost_usd, reserved_calls=want.calls,
                  reserved_input_tokens=want.input_tokens,
                  reserved_output_tokens=want.output_tokens)

    def _reserve(self, op: CallReserve, attempt: int) -> JournalEntry | None:
        self._running(attempt)
        entry = self.journal.get(op.key)
        status = entry["status"] if entry else None
        if status == "done" and entry is not None:
            if "result" not in entry:  # journal_keys reads only what reserving needs
                entry = present(self.tx.one("journal_get", job_id=self.job_id, key=op.key))
            return to_journal(entry)
        if status == "reserved" and entry is not None and entry["attempt"] == attempt:
            raise TetherError(f"call key {op.key!r} is already in flight in this job; "
                              "keys must be unique per call")
        want = op.reservation
        orphan = entry if status == "reserved" else None
        self._check(want)  # an orphan settled below leaves spent + reserved unchanged
        if orphan is not None:  # an earlier attempt's call whose outcome is unknown
            self._orphan(orphan)
        self._add(reserved_usd=want.cost_usd, reserved_calls=want.calls,
                  reserved_input_tokens=want.input_tokens,
                  reserved_output_tokens=want.output_tokens)
        money = self.store._money_param(want.cost_usd)
        self._journal_write(op.key, 1, {
            "job_id": self.job_id, "key": op.key, "stage": op.stage, "attempt": attempt,
            "provider": op.provider, "model": op.model, "request_hash": op.request_hash,
            "fingerprint": op.fingerprint, "reserved_usd": money,
            "reserved_input_tokens": want.input_tokens,
            "reserved_output_tokens": want.output_tokens, "now": self.now})
        self.journal[op.key] = {
            "job_id": self.job_id, "key": op.key, "stage": op.stage, "status": "reserved",
            "attempt": attempt, "provider": op.provider, "model": op.model,
            "request_hash": op.request_hash, "fingerprint": op.fingerprint,
            "reserved_usd": want.cost_usd,
            "reserved_input_tokens": want.input_tokens,
            "reserved_output_tokens": want.output_tokens}
        return None

    def _check(self, want: Reservation) -> None:
        """Raise ``BudgetExhausted`` if ``want`` would cross a limit of the job, of one of its
        ancestors (scope ``parent``) or of its project."""
        job_limits = self.limits[0]
        hit = (exceeded_limit(job_limits, _counters(self.acc[0]), want)
               if job_limits != _NO_LIMITS else None)
        scope = "job"
        if hit is None and job_limits.max_duration_s is not None and not job_limits.soft:
            started = self._started()
            if started is not None and self.now - started > job_limits.max_duration_s:
                hit = "max_duration_s"
        last = len(self.limits) - 1
        for i in range(1, last + 1):
            if hit is not None:
                break
            limits = self.limits[i]
            if limits != _NO_LIMITS:
                used = _counters(self.acc[i])
                if i == last and self.window is not None:
                    used = in_period(used, _counters(self.acc[-1]))
                hit = exceeded_limit(limits, used, want)
                scope = "project" if i == last else "parent"
        if hit is not None and scope == "project" and self.window is not None:
            limits = self.limits[-1]
            raise BudgetExhausted(
                f"project limit {hit} for this {limits.period} would be crossed by a call "
                f"reserving ${want.cost_usd}; the {limits.period} ends "
                f"{local_time(self.window.end, limits.timezone)}",
                limit=hit, scope=scope, reserve_usd=str(want.cost_usd), period=limits.period,
                resets_at=self.window.end, resume=limits.resumes_each_period)
        if hit is not None:
            raise BudgetExhausted(
                f"{scope} limit {hit} would be crossed by a call reserving "
                f"${want.cost_usd} ({want.input_tokens} in / {want.output_tokens} out tokens)",
                limit=hit, scope=scope, reserve_usd=str(want.cost_usd))

    def _started(self) -> float | None:
        if self._first_start == ():
            row = self.tx.one("first_start", job_id=self.job_id)
            started = row["started_at"] if row else None
            self._first_start = as_seconds(started) if started is not None else None
        return self._first_start

    def _orphan(self, entry: Row) -> None:
        """Spend an earlier attempt's open reservation in full, unconfirmed (what an attempt's
        end does: ``Accounting._orphan_rows``)."""
        delta, finish, ledger = self.store._orphan_rows(self.tx, present(self.job), entry,
                                                        self.now)
        self._add(**delta)
        self._journal_write(entry["key"], 0, finish)
        self.ledger.append(ledger)

    # --- settle ------------------------------------------------------------------------------

    def _settle(self, op: CallSettle, attempt: int) -> None:
        job = self._held(attempt)
        entry = self.journal.get(op.key)
        if entry is None or entry["status"] != "reserved" or entry["attempt"] != attempt:
            raise LeaseLost(f"job {self.job_id}: call {op.key!r} is not reserved by attempt "
                            f"{attempt}")
        usage = op.usage
        cost = op.price.cost(usage)
        reserved, tin, tout = _reserved_of(entry)
        self._add(reserved_usd=-reserved, reserved_calls=-1, reserved_input_tokens=-tin,
                  reserved_output_tokens=-tout, spent_usd=cost, calls=1,
                  input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
        store = self.store
        status = "failed" if op.refused else "done"
        usage_json = store._json_param(usage.to_dict())
        money = store._money_param(cost)
        self._journal_write(op.key, 0, {
            "job_id": self.job_id, "key": op.key, "attempt": attempt, "status": status,
            "result": op.result_json, "usage": usage_json, "cost_usd": money,
            "error_code": "policy_block" if op.refused else None,
            "error_summary": "refused by the provider" if op.refused else None, "now": self.now})
        overrun = usage.input_tokens > tin or usage.output_tokens > tout
        self.ledger.append(store._ledger_params(job, entry, usage, op.price,
                                                op.profile_id, cost, confirmed=True,
                                                overrun=overrun, now=self.now))
        if overrun:
            self.events.append({"attempt": attempt, "event": {
                "key": op.key, "reserved_input_tokens": tin, "reserved_output_tokens": tout,
                "usage": usage.to_dict()}})
        self.journal[op.key] = dict(  # what a reserve of this key later in the batch returns
            entry, job_id=self.job_id, status=status, result=op.result_json, usage=usage_json,
            cost_usd=cost, error_code="policy_block" if op.refused else None,
            updated_at=self.now)

    # --- shared ------------------------------------------------------------------------------

    def _held(self, attempt: int) -> Row:
        if self.job is None or self.job["lease_attempt"] != attempt:
            raise LeaseLost(f"job {self.job_id}: lease {attempt} is no longer held",
                            job_id=self.job_id)
        return self.job

    def _journal_write(self, key: str, kind: int, params: Row) -> None:
        """Queue a ``journal_finish`` (``kind`` 0) or ``journal_reserve`` (1) of ``key``."""
        n = self._rounds.get(key, 0)
        self._rounds[key] = n + 1
        if n == len(self.journal_writes):
            self.journal_writes.append(([], []))
        self.journal_writes[n][kind].append(params)

    def _add(self, **delta: Any) -> None:
        watch: list[tuple[Watch, dict[str, Any], dict[str, Any]]] = []
        if self.watch and any(delta.get(name) for name in SETTLED):
            watch = [(w, {n: self.acc[i][n] for n in SETTLED}, self.acc[i])
                     for i, w in self.watch]
        for (scope, _), acc, diff in zip(self.keys, self.acc, self.deltas, strict=True):
            for name, value in delta.items():
                if scope != PERIOD_SCOPE or not name.startswith("reserved_"):
                    acc[name] += value
                    diff[name] += value
        self.changed = True
        for w, before, after in watch:
            self.crossings.extend(w.found(before, after, self.job_id, self._token))


def _accumulator(row: Row) -> Row:
    acc: dict[str, Any] = {name: as_decimal(row[name]) for name in _USD}
    for name in _COUNTS:
        acc[name] = int(row[name] or 0)
    return acc


def _zero() -> dict[str, Any]:
    return {name: Decimal(0) if name in _USD else 0 for name in COUNTER_FIELDS}


def _counters(acc: dict[str, Any]) -> Counters:
    return Counters(**acc)


def _reserved_of(entry: Row) -> tuple[Decimal, int, int]:
    return (as_decimal(entry["reserved_usd"]), int(entry["reserved_input_tokens"]),
            int(entry["reserved_output_tokens"]))
