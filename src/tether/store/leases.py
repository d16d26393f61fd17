"""Leases: claiming jobs, starting attempts, renewing leases (``heartbeat``) and taking back
the expired ones.

A lease is fenced by its attempt number (``lease_attempt``): every write
a worker makes about a job names it, and fails with ``LeaseLost`` once the job is no longer
held by it. Only the database clock decides expiry.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from ..core.budget import COUNTER_FIELDS
from ..core.states import JobState, check_transition, expiry_target
from ..errors import LeaseLost
from .accounting import Accounting
from .admin import upsert_worker
from .base import Claim
from .flow import PRIORITY_AGING_S, claim_order
from .rows import as_seconds, to_job
from .totals import CLAIMS, LEASE_EXPIRIES, count_engine
from .tx import Row, Tx


class Leases(Accounting):
    """Claims, starts, heartbeats, stages and lease expiry."""

    def claim(self, worker_id: str, *, queues: Sequence[str] | None, limit: int,
              lease_ttl: float, now: float | None = None, start: bool = False,
              types: Sequence[str] | None = None,
              versions: Sequence[str] | None = None, fair: bool = True) -> list[Claim]:
        """Lease up to ``limit`` eligible jobs. With ``start`` (what a worker that runs them at
        once asks for) the first attempts also begin in the same statement: ``leased`` then
        ``running``, two events each, one commit for the whole batch. A re-attempt (a job with
        an earlier attempt) is left ``leased``: its start must first settle what that attempt
        left open. ``types`` None claims every type; else only jobs of those types, at every
        version, and of the (type, version) pairs ``versions`` names (``version_key``).
        ``fair`` (the default) serves projects fairly and ages priorities
        (``claim_jobs_fair``, docs/flow-control.md); False keeps the strict
        (priority, run_after, id) order."""
        if limit <= 0:
            return []
        with self._write() as tx:
            now = self._now(tx, now)
            rows = tx.all("claim_jobs_fair" if fair else "claim_jobs", worker_id=worker_id,
                          queues=self._list_param(queues), types=self._list_param(types),
                          versions=self._list_param(versions), limit=limit,
                          lease_ttl=lease_ttl, now=now, start=start, aging_s=PRIORITY_AGING_S)
            if not rows:
                return []
            claim_order(rows, now, fair)
            if start:
                check_transition(JobState.LEASED, JobState.RUNNING)
            events, attempts = [], []
            for r in rows:
                started = r["state"] == "running"
                attempt = r["lease_attempt"]
                seq = r["event_seq"] - 1 if started else r["event_seq"]
                attempts.append({"job_id": r["id"], "attempt": attempt, "worker_id": worker_id,
                                 "claimed_at": now, "started_at": now if started else None})
                events.append(self._event_row(
                    r["id"], seq, now, "leased", "queued", "leased", attempt,
                    {"worker_id": worker_id,
                     "waited_s": round(now - as_seconds(r["run_after"]), 6)}))
                if started:
                    events.append(self._event_row(r["id"], seq + 1, now, "running", "leased",
                                                  "running", attempt, None))
            tx.many("insert_attempt", attempts)
            tx.many("insert_event", events)
            count_engine(tx, CLAIMS, len(rows), worker_id)
            self._read_counters(tx, rows)
        return [Claim(to_job(r), int(r["lease_attempt"]), started=r["state"] == "running")
                for r in rows]

    def _claimed(self, tx: Tx, rows: list[Row], fair: bool) -> None:
        """A batch ``claim_jobs`` returned (each row with its ``claimed_at``), in claim order
        and with its counters."""
        if rows:
            claim_order(rows, as_seconds(rows[0]["claimed_at"]), fair)
        self._read_counters(tx, rows)

    def _read_counters(self, tx: Tx, rows: list[Row]) -> None:
        """Add the job accumulators to claimed rows, so a claim's Job is what ``get_job``
        returns. Only a re-attempt can have any: the rows are created by a running attempt."""
        for r in rows:
            if r["lease_attempt"] > 1:
                b = tx.one("job_budget", key=str(r["id"]))
                if b is not None:
                    r.update({name: b[name] for name in COUNTER_FIELDS})

    def start(self, job_id: int, attempt: int, *, now: float | None = None) -> JobState:
        """leased -> running under the lease. Returns the state the job is now in: ``running``,
        or ``cancelling``/``pausing`` when an operator got there first."""
        with self._write() as tx:
            now = self._now(tx, now)
            row = self._held(tx, job_id, attempt)
            tx.run("start_attempt", job_id=job_id, attempt=attempt, now=now)
            state = JobState(row["state"])
            orphans = self._settle_orphans(tx, row, now)
            if orphans:
                self._note(tx, job_id, "unconfirmed_calls_settled", now, attempt,
                           {"calls": orphans})
            if state != JobState.LEASED:
                return state
            self._transition(tx, row, JobState.RUNNING, now=now)
            return JobState.RUNNING

    def heartbeat(self, worker_id: str, *, lease_ttl: float, now: float | None = None,
                  jobs: Sequence[int] | None = None) -> dict[int, tuple[int, JobState]]:
        """Renew the worker's leases (only those on ``jobs``, the jobs it still runs, when
        given: a lease it gave up must expire, not be renewed by a worker that forgot it)."""
        with self._write() as tx:
            now = self._now(tx, now)
            rows = tx.all("heartbeat", worker_id=worker_id, lease_ttl=lease_ttl,
                          now=now,
                          jobs=None if jobs is None else self._array_param(list(jobs)))
            if not tx.run("touch_worker", worker_id=worker_id, now=now):
                known = self.__dict__.get("_registered_workers", {}).get(worker_id)
                if known is not None:
                    upsert_worker(tx, known, now)
        return {int(r["id"]): (int(r["lease_attempt"]), JobState(r["state"])) for r in rows}

    def lease_state(self, job_id: int, attempt: int) -> JobState:
        with self._read() as tx:
            row = tx.one("lease_state", id=job_id)
        if row is None or row["lease_attempt"] != attempt:
            raise LeaseLost(f"job {job_id}: lease {attempt} is no longer held", job_id=job_id)
        return JobState(row["state"])

    def set_stage(self, job_id: int, attempt: int, stage: str | None) -> None:
        with self._write() as tx:
            n = tx.run("set_stage", id=job_id, attempt=attempt, stage=stage,
                       now=self._now(tx, None))
        if n != 1:
            raise LeaseLost(f"job {job_id}: lease {attempt} is no longer held", job_id=job_id)

    def expire_leases(self, *, now: float | None = None,
                      limit: int = 500) -> list[tuple[int, JobState]]:
        """One rescuer step: every lease past its expiry (by the database clock) is taken back."""
        out: list[tuple[int, JobState]] = []
        with self._write() as tx:
            now = self._now(tx, now)
            for row in tx.all("expired_leases", now=now, limit=limit):
                to, code = expiry_target(
                    row["state"], safe_to_retry=bool(row["safe_to_retry"]),
                    attempts_left=row["attempt_count"] < row["max_attempts"])
                changes: dict[str, Any] = {}
                summary = (f"lease of worker {row['lease_owner']} expired "
                           f"(attempt {row['lease_attempt']} of {row['max_attempts']})")
                if code:
                    changes.update(error_code=code, error_summary=summary)
                elif to == JobState.CANCELLED:
                    changes.update(error_code="cancelled", error_summary="cancelled; " + summary)
                if to == JobState.QUEUED:
                    changes["run_after"] = now
                self._transition(tx, row, to, now=now, kind="lease_expired",
                                 data={"worker_id": row["lease_owner"], "error_code": code,
                                       "summary": summary}, **changes)
                self._settle_orphans(tx, row, now)
                tx.run("finish_attempt", job_id=row["id"], attempt=row["lease_attempt"],
                       now=now, outcome="lease_expired",
                       error_code="interrupted", error_summary=summary)
                out.append((int(row["id"]), to))
            count_engine(tx, LEASE_EXPIRIES, len(out))
        return out
