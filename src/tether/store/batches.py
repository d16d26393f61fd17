"""Provider batches in the store: reserved before the upload, settled item by item after.

* ``reserve_batch``: one transaction, under the lease, checks the worst case of every item
  (summed) against the job's, its ancestors' and its project's limits, adds it to their
  reservations and records the batch (items, request hashes, the batch price) as
  ``submitting``. A batch that would cross a limit raises ``BudgetExhausted`` and nothing is
  recorded: nothing may be uploaded.
* ``batch_uploading``: the mark, committed just before the upload, that the batch may be at
  the provider; an unmarked batch of a cancelled job is released in the cancel
  (``_job_cancelled``), a marked one of an ended job by the sweep (``orphaned_batches``).
* ``batch_submitted``: the provider's batch id, committed as soon as it is known.
* ``claim_due_batches`` / ``batch_polled``: the sweep's polls, with backoff.
* ``settle_batch``: one transaction writes a ledger row per billed item at the batch price,
  moves the batch's reservation to spend, records each item's outcome (a row per item in
  ``provider_batch_answers``: ``batch_answers`` reads them) and wakes the job.
* ``batch_unconfirmed``: a batch whose upload may have reached a provider that cannot be asked
  about it: its whole reservation is spent, unconfirmed (one ledger row per item).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any
from collections.abc import Mapping, Sequence

from ..core.batches import CLAIM_S, ItemResult, RemoteStatus, next_poll
from ..core.budget import Reservation
from ..core.pricing import ModelPrice, PriceProfile
from ..core.states import TERMINAL, JobState
from ..core.usage import Usage
from ..records import ProviderBatch
from .calls import Calls
from .rows import as_datetime, as_decimal, load_json
from .totals import count_spend
from .tx import Row, Tx, present
from .waits import Waits

_D0 = Decimal(0)


class Batches(Waits, Calls):
    """``reserve_batch``, ``batch_uploading``, ``batch_submitted``, ``batch_refused``,
    ``batch_unconfirmed``, ``orphaned_batches``, ``get_batch``, ``batch_answers``, ``batches``,
    ``claim_due_batches``, ``batch_polled``, ``settle_batch``."""

    def get_batch(self, job_id: int, key: str) -> ProviderBatch | None:
        with self._read() as tx:
            row = tx.one("batch_get", job_id=job_id, key=key)
        return None if row is None else to_batch(row)

    def batch_answers(self, job_id: int, key: str) -> dict[str, dict[str, Any]]:
        """A settled batch's outcome of each item, by item key in the batch's order: ``ok``,
        ``value`` (the answer), ``error_code``, ``error_summary``, ``retryable``."""
        with self._read() as tx:
            rows = tx.all("batch_answers", job_id=job_id, key=key)
        return {r["item"]: {"ok": bool(r["ok"]), "value": load_json(r["value"]),
                            "error_code": r["error_code"], "error_summary": r["error_summary"],
                            "retryable": bool(r["retryable"])} for r in rows}

    def batches(self, job_id: int) -> list[ProviderBatch]:
        """Every provider batch of a job, oldest first."""
        with self._read() as tx:
            return [to_batch(r) for r in tx.all("batches_of", job_id=job_id)]

    def open_batches(self) -> dict[str, tuple[int, Decimal]]:
        """Per provider: the batches not settled yet and the money they hold reserved."""
        out: dict[str, tuple[int, Decimal]] = {}
        with self._read() as tx:
            for row in tx.all("batches_open"):
                n, usd = out.get(row["provider"], (0, _D0))
                out[row["provider"]] = (n + 1, usd + as_decimal(row["reserved_usd"]))
        return out

    def reserve_batch(self, job_id: int, attempt: int, *, key: str, stage: str | None,
                      provider: str, model: str, tether_key: str,
                      items: Sequence[Mapping[str, Any]], price: ModelPrice,
                      standard: ModelPrice, profile_id: str,
                      now: float | None = None) -> ProviderBatch:
        """Reserve every item's worst case (``items``: ``key``, ``hash``, ``reserved_usd``,
        ``input_tokens``, ``output_tokens``) and record the batch; a batch recorded before
        (a replay) is returned as it is, nothing reserved again."""
        with self._write() as tx:
            at = self._now(tx, now)
            row = tx.one("batch_get", job_id=job_id, key=key)
            if row is not None:
                self._held(tx, job_id, attempt)
                return to_batch(row)
            cost = sum((Decimal(str(i["reserved_usd"])) for i in items), _D0)
            tin = sum(int(i["input_tokens"]) for i in items)
            tout = sum(int(i["output_tokens"]) for i in items)
            book = self._open_book(tx, job_id, [], at)
            book.reserve_batch(Reservation(cost, tin, tout, calls=len(items)), attempt)
            tx.run("batch_insert", job_id=job_id, key=key, stage=stage, attempt=attempt,
                   provider=provider, model=model, tether_key=tether_key,
                   items=json.dumps([dict(i, reserved_usd=str(i["reserved_usd"]))
                                     for i in items]),
                   price=json.dumps(price.to_dict()), standard_price=json.dumps(
                       standard.to_dict()), price_profile=profile_id,
                   reserved_usd=self._money_param(cost), reserved_input_tokens=tin,
                   reserved_output_tokens=tout, items_total=len(items), now=at)
            self._note(tx, job_id, "batch_reserved", at, attempt,
                       {"key": key, "provider": provider, "model": model,
                        "items": len(items), "reserved_usd": str(cost)})
            self._write_book(tx, book, at)
            return to_batch(present(tx.one("batch_get", job_id=job_id, key=key)))

    def batch_submitted(self, job_id: int, attempt: int | None, key: str, remote_id: str, *,
                        first_poll_s: float | None = None,
                        now: float | None = None) -> ProviderBatch:
        """Commit the provider's id of an uploaded batch; its polls start, the first after
        ``first_poll_s`` (default ``core.batches.POLL_FIRST_S``). ``attempt`` None: the sweep
        found the upload of an ended job's batch (``_owner``)."""
        with self._write() as tx:
            at = self._now(tx, now)
            if self._owner(tx, job_id, attempt) is None:
                return to_batch(present(tx.one("batch_get", job_id=job_id, key=key)))
            tx.run("batch_submitted", job_id=job_id, key=key, remote_id=remote_id,
                   wake_at=at + first_poll_s if first_poll_s is not None
                   else next_poll(0, at), now=at)
            self._note(tx, job_id, "batch_submitted", at, attempt,
                       {"key": key, "remote_id": remote_id})
            return to_batch(present(tx.one("batch_get", job_id=job_id, key=key)))

    def batch_uploading(self, job_id: int, attempt: int, key: str, *,
                        now: float | None = None) -> None:
        """Mark a reserved batch as on its way to the provider, just before its upload: until
        then it provably was never sent, so a cancel releases its reservation at once and a
        replay uploads it without asking the provider."""
        with self._write() as tx:
            at = self._now(tx, now)
            self._held(tx, job_id, attempt)
            tx.run("batch_uploading", job_id=job_id, key=key, now=at)

    def batch_refused(self, job_id: int, attempt: int | None, key: str, error_code: str, *,
                      now: float | None = None) -> bool:
        """Forget a batch the provider provably does not have (its upload failed with an
        answer, or it was never sent): its reservation is released and nothing of it stays,
        so a replay reserves and uploads it anew. ``attempt`` None: the sweep, for a job that
        ended (``orphaned_batches``). False: nothing was released."""
        with self._write() as tx:
            at = self._now(tx, now)
            job = self._owner(tx, job_id, attempt)
            row = tx.one("batch_get", job_id=job_id, key=key)
            if job is None or row is None or row["status"] != "submitting":
                return False
            self._release(tx, job, row, at, error_code)
            return True

    def orphaned_batches(self, *, limit: int = 20) -> list[ProviderBatch]:
        """Batches reserved and not known to be at the provider whose jobs ended (a crash
        or a failed upload before the job failed or was cancelled): no replay will come to
        settle them, so the sweep does (``worker/batch_poller.py``)."""
        with self._read() as tx:
            return [to_batch(r) for r in tx.all("batches_orphaned", limit=limit)]

    def _owner(self, tx: Tx, job_id: int, attempt: int | None) -> Row | None:
        """The job, locked: under the lease ``attempt``, or (``attempt`` None: the sweep) only
        while it is ended, so no attempt of it can be at the batch."""
        if attempt is not None:
            return self._held(tx, job_id, attempt)
        job = tx.one("lock_job", id=job_id)
        return job if job is not None and JobState(job["state"]) in TERMINAL else None

    def _release(self, tx: Tx, job: Row, row: Row, at: float, reason: str) -> None:
        self._adjust(tx, job, at, reserved_usd=-as_decimal(row["reserved_usd"]),
                     reserved_calls=-int(row["items_total"]),
                     reserved_input_tokens=-int(row["reserved_input_tokens"]),
                     reserved_output_tokens=-int(row["reserved_output_tokens"]))
        tx.run("batch_delete_unsent", job_id=job["id"], key=row["key"])
        self._note(tx, job["id"], "batch_released", at, None,
                   {"key": row["key"], "reason": reason,
                    "released_usd": str(as_decimal(row["reserved_usd"]))})

    def _job_cancelled(self, tx: Tx, job: Row, now: float) -> None:
        """A cancelled job's batches that were never sent give their reservations back in
        the cancel's transaction (one that may have been sent waits for the sweep)."""
        for row in tx.all("batches_unsent", job_id=job["id"]):
            self._release(tx, job, row, now, "cancelled")

    def batch_unconfirmed(self, job_id: int, attempt: int | None, key: str, reason: str, *,
                          now: float | None = None) -> ProviderBatch:
        """Spend a batch's whole reservation, unconfirmed: its upload may have reached a
        provider that offers no way to find it again (``attempt`` None: as ``batch_submitted``)."""
        with self._write() as tx:
            at = self._now(tx, now)
            if self._owner(tx, job_id, attempt) is not None:
                self._settle(tx, job_id, key, None, {}, at, error=reason)
            return to_batch(present(tx.one("batch_get", job_id=job_id, key=key)))

    def claim_due_batches(self, *, now: float | None = None,
                          limit: int = 20) -> list[ProviderBatch]:
        """Batches whose next poll is due, each taken for ``CLAIM_S`` (one sweep polls it)."""
        with self._write() as tx:
            at = self._now(tx, now)
            rows = tx.all("batches_claim_due", now=at, wake_at=at + CLAIM_S, limit=limit)
        return [to_batch(r) for r in rows]

    def batch_polled(self, job_id: int, key: str, status: RemoteStatus, *,
                     now: float | None = None) -> None:
        """Record a poll that found the batch still running; the next one backs off."""
        with self._write() as tx:
            at = self._now(tx, now)
            row = tx.one("batch_get", job_id=job_id, key=key)
            if row is None:
                return
            tx.run("batch_polled", job_id=job_id, key=key, remote_status=status.state,
                   items_done=status.done, items_failed=status.failed,
                   wake_at=next_poll(int(row["polls"]) + 1, at), now=at)

    def settle_batch(self, job_id: int, key: str, status: RemoteStatus,
                     results: Mapping[str, ItemResult], *, now: float | None = None) -> bool:
        """Settle an ended batch from its results and wake its job, in one transaction.
        False: it was settled already (by another sweep), nothing written."""
        with self._write() as tx:
            return self._settle(tx, job_id, key, status, results, self._now(tx, now))

    # --- settling ------------------------------------------------------------------------

    def _settle(self, tx: Tx, job_id: int, key: str, status: RemoteStatus | None,
                results: Mapping[str, ItemResult], now: float,
                error: str | None = None) -> bool:
        """``status`` None: unconfirmed (every item spent at its reservation)."""
        job = tx.one("lock_job", id=job_id)
        row = tx.one("batch_get", job_id=job_id, key=key)
        if job is None or row is None or row["status"] not in ("submitting", "submitted"):
            return False
        items = json.loads(row["items"])
        std = _price(json.loads(row["standard_price"]))
        batch_price = _price(json.loads(row["price"]))
        ledger: list[Row] = []
        outcomes: list[dict[str, Any]] = []
        spent = standard = _D0
        tokens_in = tokens_out = billed_n = done = failed = 0
        for item in items:
            entry = {"stage": row["stage"], "key": f"{key}/{item['key']}",
                     "attempt": row["attempt"], "provider": row["provider"],
                     "model": row["model"], "reserved_usd": item["reserved_usd"]}
            usage: Usage | None
            if status is None:
                result = ItemResult(ok=False, error_code="unconfirmed", error_summary=error,
                                    billed=True)
                usage = Usage(input_tokens=int(item["input_tokens"]),
                              output_tokens=int(item["output_tokens"]))
                cost = as_decimal(item["reserved_usd"])
            else:
                result = results.get(item["key"]) or ItemResult(
                    ok=False, error_code=f"batch_{status.state}", retryable=True,
                    error_summary=f"no result: the batch ended {status.state}")
                usage = result.usage
                cost = batch_price.cost(usage) if usage is not None else _D0
            if result.ok:
                done += 1
            else:
                failed += 1
            outcomes.append({"pos": len(outcomes), "item": item["key"], "ok": result.ok,
                             "value": result.value, "error_code": result.error_code,
                             "error_summary": result.error_summary,
                             "retryable": result.retryable})
            if usage is None or not (result.ok or result.billed):
                continue
            billed_n += 1
            spent += cost
            standard += std.cost(usage)
            tokens_in += usage.input_tokens
            tokens_out += usage.output_tokens
            overrun = (usage.input_tokens > int(item["input_tokens"])
                       or usage.output_tokens > int(item["output_tokens"]))
            ledger.append(self._ledger_params(
                job, entry, usage, batch_price, row["price_profile"], cost,
                confirmed=status is not None, overrun=overrun, now=now))
        self._adjust(tx, job, now, attempt=row["attempt"],
                     reserved_usd=-as_decimal(row["reserved_usd"]),
                     reserved_calls=-len(items),
                     reserved_input_tokens=-int(row["reserved_input_tokens"]),
                     reserved_output_tokens=-int(row["reserved_output_tokens"]),
                     spent_usd=spent, calls=billed_n, input_tokens=tokens_in,
                     output_tokens=tokens_out)
        if ledger:
            tx.many("insert_ledger", ledger)
            count_spend(tx, ledger)
        tx.run("batch_settle", job_id=job_id, key=key,
               status="settled" if status is not None else "unconfirmed",
               remote_status=status.state if status is not None else row["remote_status"],
               settled_usd=self._money_param(spent),
               standard_usd=self._money_param(standard), items_done=done,
               items_failed=failed, error=error, now=now)
        tx.run("batch_answers_insert", job_id=job_id, key=key, answers=json.dumps(outcomes))
        self._note(tx, job_id, "batch_settled", now, None,
                   {"key": key, "done": done, "failed": failed, "settled_usd": str(spent),
                    "standard_usd": str(standard), "unconfirmed": status is None})
        if job["state"] == JobState.WAITING:
            self._wake_if_ready(tx, job, now)
        return True


def _price(data: dict[str, Any]) -> ModelPrice:
    """A price as the batch row recorded it (``ModelPrice.to_dict``)."""
    profile = PriceProfile.from_dict({"name": "batch", "effective_date": "-", "models": [data]})
    return next(iter(profile.models.values()))


def to_batch(r: Row) -> ProviderBatch:
    settled = r.get("settled_usd")
    standard = r.get("standard_usd")
    return ProviderBatch(
        job_id=int(r["job_id"]), key=r["key"], provider=r["provider"], model=r["model"],
        status=r["status"], attempt=int(r["attempt"]), tether_key=r["tether_key"],
        items=json.loads(r["items"]), price=json.loads(r["price"]),
        standard_price=json.loads(r["standard_price"]), price_profile=r["price_profile"],
        reserved_usd=as_decimal(r["reserved_usd"]), items_total=int(r["items_total"]),
        created_at=as_datetime(r["created_at"]), stage=r.get("stage"),
        remote_id=r.get("remote_id"), remote_status=r.get("remote_status"),
        settled_usd=None if settled is None else as_decimal(settled),
        standard_usd=None if standard is None else as_decimal(standard),
        items_done=int(r["items_done"]), items_failed=int(r["items_failed"]),
        polls=int(r["polls"]),
        next_poll_at=as_datetime(r.get("next_poll_at")), error=r.get("error"),
        settled_at=as_datetime(r.get("settled_at")))
