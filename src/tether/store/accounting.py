"""Budget accounting in the store: accumulators, pinned price profiles, orphan recovery, the
ledger, examples, and the reads of all of them. (Reserving and settling calls: ``calls.py``.)

Each write is ONE transaction that touches the job's and the project's accumulators, the call
journal and the cost ledger together, so concurrent calls in one job and concurrent workers
across jobs can never overshoot a limit between a check and a write. Lock order is always job
row, then job budget, then project budget.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterable

from ..core.budget import COUNTER_FIELDS, Budget, BudgetStatus
from ..core.pricing import ModelPrice, PriceProfile
from ..core.usage import Usage
from ..errors import BudgetExhausted
from ..records import JournalEntry, LedgerEntry
from .rows import _dec

_D0 = Decimal(0)


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
        counters = [{name: (_dec(row[name]) if name.endswith("_usd") else int(row[name]))
                     + delta.get(name, 0) for name in COUNTER_FIELDS} for row in rows]
        self._write_budget_rows(tx, job["id"], job["project"], counters, now)

    def _write_budget_rows(self, tx: Any, job_id: int, project: str,
                           counters: list[dict[str, Any]], now: float) -> None:
        """Write the job's and the project's accumulator rows (in that order, both locked in
        this transaction): ``counters`` holds every ``COUNTER_FIELDS`` value of each, money as
        ``Decimal``. Two primary-key updates in one batch: cheaper on SQLite than one
        statement choosing each column's value by scope."""
        t = self._time_param(now)
        tx.many("update_budget_row", [
            dict({name: self._money_param(v) if name.endswith("_usd") else v
                  for name, v in values.items()}, scope=scope, key=key, now=t)
            for (scope, key), values in zip((("job", str(job_id)), ("project", project)),
                                            counters)])

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

    # --- shared by calls.py ----------------------------------------------------------------

    def _call_budgets_ready(self) -> set[int]:
        """Jobs whose accumulator rows this store has created or seen (a hint: a stale entry
        only costs the ``ensure_call_budgets`` statement it would have skipped)."""
        ready = self.__dict__.get("_call_budgets")
        if ready is None:
            ready = self.__dict__.setdefault("_call_budgets", set())
        return ready

    def _job_limits(self, raw: Any) -> Budget:
        """A budget column's limits; each distinct text is parsed once (Budget is frozen)."""
        if isinstance(raw, bytes):
            raw = raw.decode()
        if isinstance(raw, str):
            return _limits_of(raw)
        return Budget.from_dict(raw or {})

    def _settle_orphan(self, tx: Any, job: dict[str, Any], entry: dict[str, Any], now: float,
                       error: tuple[str, str] | None = None) -> None:
        """A reservation whose outcome is unknown is spent in full, marked unconfirmed."""
        delta, finish, ledger = self._orphan_rows(tx, job, entry, now, error)
        self._adjust(tx, job, now, **delta)
        tx.run("journal_finish", **finish)
        tx.run("insert_ledger", **ledger)

    def _orphan_rows(self, tx: Any, job: dict[str, Any], entry: dict[str, Any], now: float,
                     error: tuple[str, str] | None = None) -> tuple[dict, dict, dict]:
        """What settling an orphan writes — the accumulator delta, the ``journal_finish`` and
        the ``insert_ledger`` parameters — for an attempt's end here and for ``calls.py``."""
        reserved = _dec(entry["reserved_usd"])
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
                  "error_summary": summary[:2000], "now": self._time_param(now)}
        price = self._pinned_price(tx, job, entry["provider"], entry["model"]) or ModelPrice(
            entry["provider"], entry["model"], _D0, _D0)
        ledger = self._ledger_params(job, entry, usage, price,
                                     job.get("price_profile") or "unknown", reserved,
                                     confirmed=False, overrun=False, now=now)
        return delta, finish, ledger

    def _settle_orphans(self, tx: Any, job: dict[str, Any], now: float) -> int:
        rows = tx.all("journal_open", job_id=job["id"])
        for entry in rows:
            self._settle_orphan(tx, job, entry, now)
        return len(rows)

    def _ledger_params(self, job: dict[str, Any], entry: dict[str, Any], usage: Usage,
                       price: ModelPrice, profile_id: str, cost: Decimal, *, confirmed: bool,
                       overrun: bool, now: float) -> dict[str, Any]:
        """One ``insert_ledger`` row: call ``entry`` of ``job`` paid ``cost`` at ``price``."""
        money = self._money_param
        return {"job_id": job["id"], "project": job["project"], "stage": entry["stage"],
                "key": entry["key"], "attempt": entry["attempt"],
                "provider": entry["provider"], "model": entry["model"],
                "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                "cached_input_tokens": usage.cached_input_tokens,
                "reasoning_tokens": usage.reasoning_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "cache_write_1h_tokens": usage.cache_write_1h_tokens,
                "input_per_mtok": money(price.input_per_mtok),
                "output_per_mtok": money(price.output_per_mtok),
                "cached_input_per_mtok": money(price.cached_input_per_mtok),
                "cache_write_per_mtok": money(price.cache_write_per_mtok),
                "cache_write_1h_per_mtok": money(price.cache_write_1h_per_mtok),
                "price_profile": profile_id, "cost_usd": money(cost),
                "reserved_usd": money(_dec(entry["reserved_usd"])), "confirmed": confirmed,
                "overrun": overrun, "now": self._time_param(now)}

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
                   result=result_json, usage=self._json_param(usage.to_dict()),
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


@lru_cache(maxsize=1024)
def _limits_of(text: str) -> Budget:
    return Budget.from_dict(json.loads(text) or {})
