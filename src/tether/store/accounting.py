"""Budget accounting in the store: reserve, settle, release, orphan recovery, the ledger.

Each operation is ONE write transaction that touches the job's and the project's
accumulators, the call journal and the cost ledger together, so concurrent calls in one job
and concurrent workers across jobs can never overshoot a limit between a check and a write.
Lock order is always job row, then job budget, then project budget.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterable

from ..core.budget import (COUNTER_FIELDS, Budget, BudgetStatus, Counters, Reservation,
                           exceeded_limit)
from ..core.pricing import ModelPrice, PriceProfile
from ..core.states import JobState
from ..core.usage import Usage
from ..errors import BudgetExhausted, JobCancelled, JobPaused, LeaseLost, TetherError
from ..records import JournalEntry, LedgerEntry
from .rows import _dec, _ts

_D0 = Decimal(0)
_NO_LIMITS = Budget()  # nothing to check: no counters need decoding


class AccountingMixin:
    """Mixed into ``SQLStore``; relies on its transaction and parameter hooks."""

    def _money_param(self, value: Decimal | None) -> Any:
        return None if value is None else str(value)

    # --- accumulators -------------------------------------------------------------------------

    def _budget(self, tx: Any, scope: str, key: str, now: float) -> dict[str, Any]:
        tx.run("ensure_budget", scope=scope, key=key, now=self._time_param(now))
        return tx.one("lock_budget", scope=scope, key=key)

    def _budget_pair(self, tx: Any, job: dict[str, Any], now: float) -> tuple[dict, dict]:
        """The job's and the project's accumulator rows, locked (job first), in ONE statement;
        rows that do not exist yet are created first (once per job and per project)."""
        params = {"job_key": str(job["id"]), "project": job["project"]}
        rows = tx.all("lock_call_budgets", **params)
        if len(rows) < 2:
            for scope, key in (("job", params["job_key"]), ("project", job["project"])):
                tx.run("ensure_budget", scope=scope, key=key, now=self._time_param(now))
            rows = tx.all("lock_call_budgets", **params)
        job_row, project_row = sorted(rows, key=lambda r: r["scope"])  # 'job' < 'project'
        return job_row, project_row

    def _adjust(self, tx: Any, job: dict[str, Any], now: float,
                rows: tuple[dict, dict] | None = None, **delta: Any) -> None:
        """Add ``delta`` to the job's and the project's counters (job first: lock order).
        ``rows``: the pair already read and locked in this transaction by ``_budget_pair``
        (and not written since), so they are not read again."""
        if rows is None:
            rows = self._budget_pair(tx, job, now)
        params: dict[str, Any] = {"job_key": str(job["id"]), "project": job["project"],
                                  "now": self._time_param(now)}
        for prefix, row in zip(("j_", "p_"), rows):
            for name in COUNTER_FIELDS:
                value = row[name]  # unchanged counters are written back as read
                if name in delta:
                    if name.endswith("_usd"):
                        value = self._money_param(_dec(value) + delta[name])
                    else:
                        value = int(value) + delta[name]
                params[prefix + name] = value
        if tx.run("update_call_budgets", **params) != 2:  # pragma: no cover - rows are locked
            raise TetherError(f"job {job['id']}: budget rows vanished mid-transaction")

    # --- the pinned price profile -------------------------------------------------------------

    def save_profile(self, profile: PriceProfile) -> str:
        with self._write() as tx:
            self._save_profile(tx, profile, self._now(tx, None))
        return profile.id

    def _save_profile(self, tx: Any, profile: PriceProfile, now: float) -> None:
        tx.run("save_profile", id=profile.id, name=profile.name,
               effective_date=profile.effective_date,
               body=json.dumps(profile.to_dict(), sort_keys=True), now=self._time_param(now))

    def get_profile(self, profile_id: str) -> PriceProfile | None:
        with self._read() as tx:
            row = tx.one("get_profile", id=profile_id)
        return PriceProfile.from_dict(json.loads(row["body"])) if row else None

    def _pinned_price(self, tx: Any, job: dict[str, Any], provider: str,
                      model: str) -> ModelPrice | None:
        if not job.get("price_profile"):
            return None
        row = tx.one("get_profile", id=job["price_profile"])
        if row is None:
            return None
        return PriceProfile.from_dict(json.loads(row["body"])).models.get((provider, model))

    # --- reserve / settle / release -----------------------------------------------------------

    def _call_rows(self, tx: Any, job_id: int, key: str,
                   now: float) -> tuple[dict[str, Any], tuple[dict, dict]] | None:
        """ONE statement for what a reserve or settle needs: the job's lease and limits (row
        share-locked on PostgreSQL, so no transition can slip in before commit), call
        ``key``'s journal status, and both accumulator rows (locked for update, job first).
        Creates missing accumulator rows first (a job's first call). None: no such job."""
        params = {"job_id": job_id, "key": key, "job_key": str(job_id)}
        rows = [] if job_id not in self._call_budgets_ready() else tx.all("lock_call", **params)
        if len(rows) < 2:
            tx.run("ensure_call_budgets", job_id=job_id, now=self._time_param(now))
            rows = tx.all("lock_call", **params)
            if len(rows) < 2:
                return None
            ready = self._call_budgets_ready()
            if len(ready) > 10_000:
                ready.clear()
            ready.add(job_id)
        rows.sort(key=lambda r: r["scope"])  # 'job' < 'project'
        r = rows[0]
        job = {"id": job_id, "project": r["job_project"], "state": r["job_state"],
               "lease_token": r["lease_token"], "budget": r["budget"],
               "price_profile": r["price_profile"]}
        return job, (rows[0], rows[1])

    def _call_budgets_ready(self) -> set[int]:
        """Jobs whose accumulator rows this store has created or seen (a hint: a stale entry
        only costs the ``ensure_call_budgets`` statement it would have skipped)."""
        ready = self.__dict__.get("_call_budgets")
        if ready is None:
            ready = self.__dict__.setdefault("_call_budgets", set())
        return ready

    def reserve(self, job_id: int, token: int, *, key: str, stage: str | None, provider: str,
                model: str, reservation: Reservation, request_hash: str | None = None,
                now: float | None = None) -> JournalEntry | None:
        """Reserve the worst case for call ``key``. Returns the journal entry instead, without
        reserving, when the key is already done. Raises ``BudgetExhausted`` (nothing written)
        when a job or project limit would be crossed, ``JobCancelled``/``JobPaused`` when an
        operator stopped the job: no call starts after a cancel is recorded.

        The common case is three statements: ``lock_call`` (lease, journal status, both
        accumulators), ``update_call_budgets`` (both rows), ``journal_reserve``."""
        with self._write() as tx:
            now = self._now(tx, now)
            found = self._call_rows(tx, job_id, key, now)
            if found is None or found[0]["lease_token"] != token:
                raise LeaseLost(f"job {job_id}: lease {token} is no longer held", job_id=job_id)
            job, rows = found
            if job["state"] == JobState.CANCELLING:
                raise JobCancelled(f"job {job_id} was cancelled")
            if job["state"] == JobState.PAUSING:
                raise JobPaused(f"job {job_id} was paused")
            if job["state"] != JobState.RUNNING:
                raise LeaseLost(f"job {job_id} is {job['state']}, not running")
            status = rows[0]["call_status"]
            if status == "done":
                return self._journal(tx.one("journal_get", job_id=job_id, key=key))
            if status == "reserved":
                if rows[0]["call_attempt"] == token:
                    raise TetherError(f"call key {key!r} is already in flight in this job; "
                                      "keys must be unique per call")
                self._settle_orphan(tx, job, tx.one("journal_get", job_id=job_id, key=key), now)
                rows = self._budget_pair(tx, job, now)  # the orphan changed them
            self._check_limits(tx, job, rows, reservation, now)
            self._adjust(tx, job, now, rows, reserved_usd=reservation.cost_usd,
                         reserved_calls=reservation.calls,
                         reserved_input_tokens=reservation.input_tokens,
                         reserved_output_tokens=reservation.output_tokens)
            written = tx.run("journal_reserve", job_id=job_id, key=key, stage=stage,
                             attempt=token, provider=provider, model=model,
                             request_hash=request_hash,
                             reserved_usd=self._money_param(reservation.cost_usd),
                             reserved_input_tokens=reservation.input_tokens,
                             reserved_output_tokens=reservation.output_tokens,
                             now=self._time_param(now))
            if written != 1:  # reserved or done since lock_call read it: the same key, twice
                raise TetherError(f"call key {key!r} is already in flight in this job; "
                                  "keys must be unique per call")
        return None

    def _check_limits(self, tx: Any, job: dict[str, Any], rows: tuple[dict, dict],
                      want: Reservation, now: float) -> None:
        limits = self._job_limits(job.get("budget"))
        job_b, proj = rows
        hit = exceeded_limit(limits, self._counters(job_b), want) if limits != _NO_LIMITS \
            else None
        scope = "job"
        if hit is None and limits.max_duration_s is not None:
            first = tx.one("first_start", job_id=job["id"])
            started = first and first["started_at"]
            if started is not None and now - _as_ts(started) > limits.max_duration_s:
                hit = "max_duration_s"
        if hit is None:
            project_limits = self._job_limits(proj["limits"])
            if project_limits != _NO_LIMITS:
                hit = exceeded_limit(project_limits, self._counters(proj), want)
            scope = "project"
        if hit is not None:
            raise BudgetExhausted(
                f"{scope} limit {hit} would be crossed by a call reserving "
                f"${want.cost_usd} ({want.input_tokens} in / {want.output_tokens} out tokens)",
                limit=hit, scope=scope, reserve_usd=str(want.cost_usd))

    def _job_limits(self, raw: Any) -> Budget:
        """A budget column's limits; each distinct text is parsed once (Budget is frozen)."""
        if isinstance(raw, bytes):
            raw = raw.decode()
        if isinstance(raw, str):
            return _limits_of(raw)
        return Budget.from_dict(raw or {})

    def settle(self, job_id: int, token: int, *, key: str, usage: Usage, price: ModelPrice,
               profile_id: str, result_json: str, refused: bool = False,
               now: float | None = None) -> LedgerEntry:
        """Record a completed call: journal ``done``, reservation replaced by the real cost,
        one confirmed ledger row (flagged as an overrun if usage exceeded the estimate).
        A ``refused`` call (a refusal in a billed response) is paid but journaled ``failed``,
        so an operator's retry may ask again.

        The common case is four statements: ``lock_call``, ``update_call_budgets``,
        ``journal_finish``, ``insert_ledger``. An overrun also appends an event, which writes
        the job row: that settle takes the job row's exclusive lock from its start instead."""
        try:
            with self._write() as tx:
                now = self._now(tx, now)
                found = self._call_rows(tx, job_id, key, now)
                if found is None or found[0]["lease_token"] != token:
                    raise LeaseLost(f"job {job_id}: lease {token} is no longer held",
                                    job_id=job_id)
                job, rows = found
                entry = _entry_of(rows[0], job_id, key)
                if entry["status"] != "reserved" or entry["attempt"] != token:
                    raise LeaseLost(f"job {job_id}: call {key!r} is not reserved by attempt "
                                    f"{token}")
                if _overrun(entry, usage):
                    raise _Exclusive()
                return self._settle_locked(tx, job, rows, entry, token, usage, price,
                                           profile_id, result_json, refused, now)
        except _Exclusive:
            pass
        with self._write() as tx:
            now = self._now(tx, now)
            job = self._held(tx, job_id, token)  # the job row locked for update: the event
            entry = tx.one("journal_get", job_id=job_id, key=key)
            if entry is None or entry["status"] != "reserved" or entry["attempt"] != token:
                raise LeaseLost(f"job {job_id}: call {key!r} is not reserved by attempt {token}")
            return self._settle_locked(tx, job, self._budget_pair(tx, job, now), entry, token,
                                       usage, price, profile_id, result_json, refused, now)

    def _settle_locked(self, tx: Any, job: dict[str, Any], rows: tuple[dict, dict],
                       entry: dict[str, Any], token: int, usage: Usage, price: ModelPrice,
                       profile_id: str, result_json: str, refused: bool,
                       now: float) -> LedgerEntry:
        job_id, key = job["id"], entry["key"]
        cost = price.cost(usage)
        self._adjust(tx, job, now, rows, reserved_usd=-_dec(entry["reserved_usd"]),
                     reserved_calls=-1,
                     reserved_input_tokens=-entry["reserved_input_tokens"],
                     reserved_output_tokens=-entry["reserved_output_tokens"],
                     spent_usd=cost, calls=1, input_tokens=usage.input_tokens,
                     output_tokens=usage.output_tokens)
        finished = tx.run("journal_finish", job_id=job_id, key=key, attempt=token,
                          status="failed" if refused else "done",
                          result=result_json, usage=self._json_param(_usage_dict(usage)),
                          cost_usd=self._money_param(cost),
                          error_code="policy_block" if refused else None,
                          error_summary="refused by the provider" if refused else None,
                          now=self._time_param(now))
        if finished != 1:  # pragma: no cover - the reservation was read under the locks
            raise LeaseLost(f"job {job_id}: call {key!r} is not reserved by attempt {token}")
        overrun = _overrun(entry, usage)
        row = self._ledger_row(tx, job, entry, usage, price, profile_id, cost,
                               confirmed=True, overrun=overrun, now=now)
        if overrun:
            self._note(tx, job_id, "estimate_overrun", now, token, {
                "key": key, "reserved_input_tokens": entry["reserved_input_tokens"],
                "reserved_output_tokens": entry["reserved_output_tokens"],
                "usage": usage.to_dict()})
        return self._ledger(row)

    def release(self, job_id: int, token: int, *, key: str, error_code: str,
                error_summary: str, billed: bool | None, now: float | None = None) -> None:
        """A call that raised. ``billed=False`` (the provider answered with a refusal): the
        reservation is refunded and nothing is spent. Otherwise the outcome is unknown and the
        reservation is counted as spent, unconfirmed, so the ledger never under-reports."""
        with self._write() as tx:
            now = self._now(tx, now)
            job = self._held(tx, job_id, token)
            entry = tx.one("journal_get", job_id=job_id, key=key)
            if entry is None or entry["status"] != "reserved" or entry["attempt"] != token:
                return
            if billed is False:
                self._adjust(tx, job, now, reserved_usd=-_dec(entry["reserved_usd"]),
                             reserved_calls=-1,
                             reserved_input_tokens=-entry["reserved_input_tokens"],
                             reserved_output_tokens=-entry["reserved_output_tokens"])
                tx.run("journal_finish", job_id=job_id, key=key, attempt=token,
                       status="failed", result=None, usage=None, cost_usd=None,
                       error_code=error_code, error_summary=error_summary[:2000],
                       now=self._time_param(now))
            else:
                self._settle_orphan(tx, job, entry, now, error=(error_code, error_summary))

    def _settle_orphan(self, tx: Any, job: dict[str, Any], entry: dict[str, Any], now: float,
                       error: tuple[str, str] | None = None) -> None:
        """A reservation whose outcome is unknown is spent in full, marked unconfirmed."""
        reserved = _dec(entry["reserved_usd"])
        usage = Usage(input_tokens=entry["reserved_input_tokens"],
                      output_tokens=entry["reserved_output_tokens"])
        self._adjust(tx, job, now, reserved_usd=-reserved, reserved_calls=-1,
                     reserved_input_tokens=-usage.input_tokens,
                     reserved_output_tokens=-usage.output_tokens, spent_usd=reserved, calls=1,
                     input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
        code, summary = error or ("unconfirmed", "outcome unknown after the attempt ended")
        tx.run("journal_finish", job_id=job["id"], key=entry["key"], attempt=entry["attempt"],
               status="unconfirmed", result=None, usage=None,
               cost_usd=self._money_param(reserved), error_code=code,
               error_summary=summary[:2000], now=self._time_param(now))
        price = self._pinned_price(tx, job, entry["provider"], entry["model"]) or ModelPrice(
            entry["provider"], entry["model"], _D0, _D0)
        self._ledger_row(tx, job, entry, usage, price, job.get("price_profile") or "unknown",
                         reserved, confirmed=False, overrun=False, now=now)

    def _settle_orphans(self, tx: Any, job: dict[str, Any], now: float) -> int:
        rows = tx.all("journal_open", job_id=job["id"])
        for entry in rows:
            self._settle_orphan(tx, job, entry, now)
        return len(rows)

    def _ledger_row(self, tx: Any, job: dict[str, Any], entry: dict[str, Any], usage: Usage,
                    price: ModelPrice, profile_id: str, cost: Decimal, *, confirmed: bool,
                    overrun: bool, now: float) -> dict[str, Any]:
        return tx.one("insert_ledger", job_id=job["id"], project=job["project"],
                     stage=entry["stage"], key=entry["key"], attempt=entry["attempt"],
                     provider=entry["provider"], model=entry["model"],
                     input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                     cached_input_tokens=usage.cached_input_tokens,
                     reasoning_tokens=usage.reasoning_tokens,
                     input_per_mtok=self._money_param(price.input_per_mtok),
                     output_per_mtok=self._money_param(price.output_per_mtok),
                     cached_input_per_mtok=self._money_param(price.cached_input_per_mtok),
                     price_profile=profile_id, cost_usd=self._money_param(cost),
                     reserved_usd=self._money_param(_dec(entry["reserved_usd"])),
                     confirmed=confirmed, overrun=overrun, now=self._time_param(now))

    def _note(self, tx: Any, job_id: int, kind: str, now: float, attempt: int | None,
              data: dict[str, Any]) -> None:
        seq = tx.one("bump_event_seq", id=job_id)["event_seq"]
        tx.run("insert_event", **self._event_row(job_id, seq, now, kind, None, None, attempt,
                                                 data))

    # --- examples -----------------------------------------------------------------------------

    def add_examples(self, job_id: int, token: int, n: int, *, now: float | None = None) -> int:
        """Count ``n`` produced examples against ``max_examples`` (job and project)."""
        with self._write() as tx:
            now = self._now(tx, now)
            job = self._held(tx, job_id, token)
            for scope, key, limits in (
                    ("job", str(job_id), Budget.from_dict(self._load_json(job["budget"]) or {})),
                    ("project", job["project"], None)):
                row = self._budget(tx, scope, key, now)
                if limits is None:
                    limits = Budget.from_dict(self._load_json(row["limits"]) or {})
                have = int(row["examples"])
                if limits.max_examples is not None and have + n > limits.max_examples:
                    raise BudgetExhausted(f"{scope} limit max_examples ({limits.max_examples}) "
                                          f"would be crossed", limit="max_examples", scope=scope)
            self._adjust(tx, job, now, examples=n)
            return int(self._budget(tx, "job", str(job_id), now)["examples"])

    # --- reads and project budgets ------------------------------------------------------------

    def journal(self, job_id: int, key: str | None = None) -> list[JournalEntry]:
        with self._read() as tx:
            if key is not None:
                row = tx.one("journal_get", job_id=job_id, key=key)
                return [self._journal(row)] if row else []
            return [self._journal(r) for r in tx.all("journal_list", job_id=job_id)]

    def cached_result(self, project: str, request_hash: str) -> tuple[Any, Usage] | None:
        with self._read() as tx:
            row = tx.one("journal_cached", project=project, request_hash=request_hash)
        if row is None:
            return None
        return self._load_json(row["result"]), Usage.from_dict(self._load_json(row["usage"]))

    def record_cached(self, job_id: int, token: int, *, key: str, stage: str | None,
                      provider: str, model: str, request_hash: str, result_json: str,
                      usage: Usage) -> None:
        """Journal ``key`` as done with a result reused from an identical earlier request in
        the project (the call cache): no reservation, no spend, no ledger row."""
        with self._write() as tx:
            now = self._now(tx, None)
            self._held(tx, job_id, token)
            tx.run("journal_record_cached", job_id=job_id, key=key, stage=stage, attempt=token,
                   provider=provider, model=model, request_hash=request_hash,
                   result=result_json, usage=self._json_param(_usage_dict(usage)),
                   now=self._time_param(now))

    def ledger(self, job_id: int) -> list[LedgerEntry]:
        with self._read() as tx:
            return [self._ledger(r) for r in tx.all("list_ledger", job_id=job_id)]

    def spend_totals(self, projects: Iterable[str] | None = None) -> list[dict[str, Any]]:
        with self._read() as tx:
            rows = tx.all("spend_totals", projects=self._list_param(projects))
        return [{"provider": r["provider"], "model": r["model"], "calls": int(r["calls"]),
                 "input_tokens": int(r["input_tokens"] or 0),
                 "output_tokens": int(r["output_tokens"] or 0),
                 "cost_usd": sum((Decimal(x) for x in str(r["costs"] or "").split()), _D0),
                 "unconfirmed_calls": int(r["unconfirmed"] or 0)} for r in rows]

    def project_budget(self, project: str) -> BudgetStatus:
        with self._read() as tx:
            row = tx.one("project_budget", key=project)
        if row is None:
            return BudgetStatus()
        return BudgetStatus(Budget.from_dict(self._load_json(row["limits"]) or {}),
                            self._counters(row))

    def set_project_budget(self, project: str, changes: Budget) -> BudgetStatus:
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._budget(tx, "project", project, now)  # locked: concurrent edits serialise
            current = Budget.from_dict(self._load_json(row["limits"]) or {})
            merged = current.merged(changes)
            tx.run("set_budget_limits", scope="project", key=project,
                   limits=self._json_param(merged.to_dict()), now=self._time_param(now))
        return self.project_budget(project)


def _as_ts(value: Any) -> float:
    return _ts(value)


class _Exclusive(Exception):
    """A settle that must lock the job row for update (it appends an event): start over."""


@lru_cache(maxsize=1024)
def _limits_of(text: str) -> Budget:
    return Budget.from_dict(json.loads(text) or {})


def _entry_of(row: dict[str, Any], job_id: int, key: str) -> dict[str, Any]:
    """The journal columns of a ``lock_call`` row, named as in ``call_journal``."""
    return {"job_id": job_id, "key": key, "status": row["call_status"],
            "attempt": row["call_attempt"], "stage": row["call_stage"],
            "provider": row["call_provider"], "model": row["call_model"],
            "reserved_usd": row["call_reserved_usd"],
            "reserved_input_tokens": row["call_reserved_input_tokens"],
            "reserved_output_tokens": row["call_reserved_output_tokens"]}


def _usage_dict(usage: Usage) -> dict[str, int]:
    """``usage.to_dict()`` without ``dataclasses.asdict`` (which deep-copies: ~20 us)."""
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "reasoning_tokens": usage.reasoning_tokens}


def _overrun(entry: dict[str, Any], usage: Usage) -> bool:
    return (usage.input_tokens > entry["reserved_input_tokens"]
            or usage.output_tokens > entry["reserved_output_tokens"])
