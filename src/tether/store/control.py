"""What operators and background loops do to jobs: cancel, pause, resume, retry, requeue,
change a job's limits; promote retries whose backoff elapsed; prune old finished jobs."""

from __future__ import annotations

import time
from typing import Any
from collections.abc import Iterable

from ..core.budget import Budget
from ..core.states import TERMINAL, JobState, operator_target
from ..errors import InvalidArgument, JobStateError
from ..records import Job
from .flowkeys import check_singleton_free
from .rows import limits_of, to_job
from .transitions import Transitions
from .totals import fold_counters
from .tx import Row, Tx, present

PRUNE_BATCH = 1000
"""Jobs ``prune`` deletes a transaction by default (bench/README.md's big-tables
workload measures claims during a prune beside millions of finished jobs)."""


class Control(Transitions):
    """Operator actions and the maintenance steps that are not about leases."""

    def control(self, job_id: int, action: str, *, projects: Iterable[str] | None = None,
                reason: str | None = None, on_change: str | None = None) -> Job:
        """``on_change`` (``resume`` only): the decision for a job paused by
        ``journal_mismatch``, kept in the ``resume`` event (``replays.py``)."""
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._locked(tx, job_id, projects)
            if on_change is not None and (action != "resume" or row["state"] != "paused"
                                          or row["error_code"] != "journal_mismatch"):
                raise JobStateError(
                    f"job {job_id} is {row['state']} ({row['error_code'] or 'no error'}); "
                    "on_change decides only for a job paused by journal_mismatch",
                    job_id=job_id, state=row["state"])
            to = operator_target(action, row["state"])
            changes: dict[str, Any] = {}
            if to == JobState.QUEUED:
                check_singleton_free(tx, row)
                changes.update(run_after=now, max_attempts=max(row["max_attempts"],
                                                              row["attempt_count"] + 1))
                if action in ("retry", "requeue", "resume"):
                    changes.update(error_code=None, error_summary=None)
            if to == JobState.CANCELLED and row["state"] != "failed":
                changes.update(error_code="cancelled", error_summary=reason or "cancelled")
            data = {"action": action}
            if reason:
                data["reason"] = reason
            if on_change is not None:
                data["on_change"] = on_change
            self._transition(tx, row, to, now=now, kind=action, data=data, **changes)
            if action == "cancel":
                self._cancel_children(tx, job_id, now)
            return to_job(present(tx.one("get_job", id=job_id)))

    def _cancel_children(self, tx: Tx, parent_id: int, now: float) -> None:
        """A cancelled parent's live children are cancelled with it (a running child stops at
        its next safe boundary), and theirs in turn; ``detach``-ed children are left alone."""
        todo = [parent_id]
        while todo:
            parent = todo.pop()
            for child in tx.all("live_children", id=parent):
                to = operator_target("cancel", child["state"])
                self._transition(tx, child, to, now=now, kind="cancel",
                                 data={"action": "cancel", "reason": f"parent {parent} cancelled"},
                                 **({"error_code": "cancelled",
                                     "error_summary": f"parent job {parent} was cancelled"}
                                    if to == JobState.CANCELLED else {}))
                todo.append(int(child["id"]))

    def set_budget(self, job_id: int, budget: Budget, *,
                   projects: Iterable[str] | None = None) -> Job:
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._locked(tx, job_id, projects)
            if JobState(row["state"]) in TERMINAL and row["state"] != "failed":
                raise JobStateError(f"job {job_id} is {row['state']}; its budget is final")
            limits = limits_of(row["budget"]).merged(budget)
            self._set_limits(tx, row, limits, now)
            return to_job(present(tx.one("get_job", id=job_id)))

    def _set_limits(self, tx: Tx, row: Row, limits: Budget, now: float) -> None:
        new = dict(self._mutable(row), budget=self._json_param(limits.to_dict()))
        seq = self._update_row(tx, row["id"], new, now)
        tx.run("insert_event", **self._event_row(row["id"], seq, now, "budget_changed", None,
                                                 None, None, {"limits": limits.to_dict()}))

    # --- maintenance ---------------------------------------------------------------------

    def promote_due(self, *, now: float | None = None, limit: int = 1000) -> int:
        """One stager step: retry_wait jobs whose backoff has elapsed become queued, and jobs
        paused by a periodic project limit resume once their period has rolled over."""
        with self._write() as tx:
            now = self._now(tx, now)
            rows = tx.all("due_retries", now=now, limit=limit)
            for row in rows:
                self._transition(tx, row, JobState.QUEUED, now=now, kind="retry_due")
            renewed = tx.all("due_period_resumes", now=now, limit=limit)
            for row in renewed:
                self._transition(tx, row, JobState.QUEUED, now=now, kind="budget_period_reset",
                                 run_after=now, error_code=None, error_summary=None,
                                 max_attempts=max(row["max_attempts"],
                                                  row["attempt_count"] + 1))
        return len(rows) + len(renewed)

    _prune_batch = PRUNE_BATCH
    _prune_yield = 0.0
    """After each batch, prune pauses this many times the batch's own duration: a backend with
    one writer lock (SQLite) hands it to the writers that waited, instead of taking it back
    at once while they sleep between tries."""

    def prune(self, *, older_than_s: float, now: float | None = None,
              batch: int | None = None) -> int:
        """Delete terminal jobs finished before ``now - older_than_s`` (their events,
        attempts, journal, ledger rows, checkpoints, waits, signals, provider batches and own
        budget rows go with them; a job whose provider batch is not settled yet stays until
        it is), oldest first, ``batch`` jobs a transaction (default: the backend's): no
        lock a claim needs (SQLite's one writer lock; PostgreSQL's row locks) is held for
        longer than one batch, however many jobs go. The cutoff is fixed once, so a prune
        ends even while jobs finish. Webhook deliveries made before the cutoff whose delivery
        job is gone go too, with their attempts, and schedule misses recorded before it. Then
        the workers gone before the cutoff (stopped, or silent since) and holding no lease are
        forgotten, their counts kept in the totals. Returns how many jobs were deleted; an
        interrupted prune keeps what it deleted."""
        batch = self._prune_batch if batch is None else batch
        if batch < 1:
            raise InvalidArgument(f"prune batch must be at least 1, not {batch}")
        with self._read() as tx:
            cutoff = self._now(tx, now) - older_than_s
        total, since = 0, 0.0
        while True:
            started = time.monotonic()
            with self._write() as tx:
                rows = tx.all("prune_jobs", since=since, cutoff=cutoff, limit=batch)
            total += len(rows)
            if len(rows) < batch:
                break
            since = max(r["finished_at"] for r in rows)
            if self._prune_yield:
                time.sleep(self._prune_yield * (time.monotonic() - started))
        with self._write() as tx:
            # Only old blobs: a fresh one may belong to a checkpoint about to commit.
            tx.run("prune_blobs", cutoff=cutoff)
            # Webhook deliveries whose job went (and their attempts); old schedule misses.
            tx.run("prune_webhook_attempts", cutoff=cutoff)
            tx.run("prune_webhook_deliveries", cutoff=cutoff)
            tx.run("prune_schedule_misses", cutoff=cutoff)
            gone = [r["id"] for r in tx.all("forget_gone_workers", cutoff=cutoff)]
            if gone:
                fold_counters(tx, self._array_param(gone))
        return total
