"""Reads of the call journal and the cost ledger, and the call cache (a result reused from an
identical earlier request in the project)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from collections.abc import Iterable

from ..core.usage import Usage
from ..records import JournalEntry, LedgerEntry
from .base import SpendTotal
from .rows import load_json, to_journal, to_ledger
from .transitions import Transitions

_D0 = Decimal(0)


class Journal(Transitions):
    """What each call of a job did and cost."""

    def journal(self, job_id: int, key: str | None = None) -> list[JournalEntry]:
        with self._read() as tx:
            if key is not None:
                row = tx.one("journal_get", job_id=job_id, key=key)
                return [to_journal(row)] if row else []
            return [to_journal(r) for r in tx.all("journal_list", job_id=job_id)]

    def ledger(self, job_id: int) -> list[LedgerEntry]:
        with self._read() as tx:
            return [to_ledger(r) for r in tx.all("list_ledger", job_id=job_id)]

    def spend_totals(self, projects: Iterable[str] | None = None) -> list[SpendTotal]:
        with self._read() as tx:
            rows = tx.all("spend_totals", projects=self._list_param(projects))
        return [{"provider": r["provider"], "model": r["model"], "calls": int(r["calls"]),
                 "input_tokens": int(r["input_tokens"] or 0),
                 "output_tokens": int(r["output_tokens"] or 0),
                 "cost_usd": sum((Decimal(x) for x in str(r["costs"] or "").split()), _D0),
                 "unconfirmed_calls": int(r["unconfirmed"] or 0)} for r in rows]

    def spent_projects(self) -> list[str]:
        """Projects with spend in the running totals (a few rows, not the ledger)."""
        with self._read() as tx:
            return [r["project"] for r in tx.all("spent_projects")]

    def cached_result(self, project: str, request_hash: str) -> tuple[Any, Usage] | None:
        with self._read() as tx:
            row = tx.one("journal_cached", project=project, request_hash=request_hash)
        if row is None:
            return None
        return load_json(row["result"]), Usage.from_dict(load_json(row["usage"]))

    def record_cached(self, job_id: int, attempt: int, *, key: str, stage: str | None,
                      provider: str, model: str, request_hash: str, result_json: str,
                      usage: Usage, fingerprint: str | None = None) -> None:
        """Journal ``key`` as done with a result reused from an identical earlier request in
        the project (the call cache): no reservation, no spend, no ledger row."""
        with self._write() as tx:
            now = self._now(tx, None)
            self._held(tx, job_id, attempt)
            tx.run("journal_record_cached", job_id=job_id, key=key, stage=stage, attempt=attempt,
                   provider=provider, model=model, request_hash=request_hash,
                   result=result_json, usage=self._json_param(usage.to_dict()),
                   now=now, fingerprint=fingerprint)
