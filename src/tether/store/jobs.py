"""Submitting jobs and reading them back.

A submission is one transaction (the caller's, with ``conn``): its queue rows, the price
profile it pins, the job rows and their ``submitted`` events. An idempotency key that exists
returns the existing job, exactly as ``get_job`` reads it, or raises ``IdempotencyConflict``
when the configuration differs.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..core.pricing import PriceProfile
from ..core.states import JobState
from ..errors import IdempotencyConflict
from ..records import Attempt, Event, Job
from .base import CallerConnection, NewJob
from .profiles import Profiles
from .rows import to_attempt, to_event, to_job
from .transitions import compact_json
from .tx import Row, Tx


class Jobs(Profiles):
    """Submission and the reads of jobs, their events and attempts."""

    def submit(self, jobs: Sequence[NewJob], *, conn: CallerConnection | None = None,
               profile: PriceProfile | None = None) -> list[tuple[Job, bool]]:
        """Insert jobs in one transaction (the caller's, with ``conn``); ``profile`` is the
        price profile they pin, stored in the same transaction."""
        out: list[tuple[Job, bool]] = []
        queues, pin = self._setup_rows(jobs, profile, conn)
        with self._write(conn) as tx:
            now = self._now(tx, None)
            if pin:
                self._save_profile(tx, profile, now)
            for queue in queues:
                tx.run("ensure_queue", name=queue, now=now)
            for spec, row in zip(jobs, self._insert_jobs(tx, jobs, now)):
                if row is not None:
                    out.append((to_job(row), True))
                    continue
                existing = tx.one("job_by_key", project=spec.project,
                                  idempotency_key=spec.idempotency_key)
                if existing is None:  # pragma: no cover - conflict row vanished mid-transaction
                    raise IdempotencyConflict("idempotency key conflict could not be resolved")
                if existing["input_config_hash"] != spec.input_config_hash:
                    raise IdempotencyConflict(
                        f"idempotency key {spec.idempotency_key!r} in project {spec.project!r} "
                        f"belongs to job {existing['id']} with a different configuration",
                        job_id=existing["id"], idempotency_key=spec.idempotency_key)
                out.append((to_job(existing), False))
        if conn is None:
            known = self._known_rows()
            known.update(queues)
            if pin:
                known.add(("profile", profile.id))
        return out

    _submit_writes_events = False
    """True where ``insert_jobs`` also writes the submitted events (PostgreSQL)."""

    def _insert_jobs(self, tx: Tx, jobs: Sequence[NewJob], now: float) -> list[Row | None]:
        """Insert ``jobs`` with one statement; the new row at each position, or None where
        the idempotency key already existed (or came earlier in this batch). Rows are
        matched back by key, and unkeyed rows by id order, which follows insertion order."""
        rows = tx.all("insert_jobs", jobs=compact_json([{
            "ord": i, "type": j.type, "project": j.project, "queue": j.queue,
            "priority": j.priority,
            "run_after": j.run_after, "max_attempts": j.max_attempts,
            "safe_to_retry": j.safe_to_retry, "idempotency_key": j.idempotency_key,
            "input_config_hash": j.input_config_hash, "payload": j.payload_json,
            "budget": self._json_param(j.budget.to_dict()), "price_profile": j.price_profile,
            "estimated_cost_usd": j.estimated_cost_usd, "parent_id": j.parent_id}
            for i, j in enumerate(jobs)]), now=now)
        keyed = {(r["project"], r["idempotency_key"]): r for r in rows
                 if r["idempotency_key"] is not None}
        plain = iter(sorted((r for r in rows if r["idempotency_key"] is None),
                            key=lambda r: r["id"]))
        out: list[Row | None] = []
        for j in jobs:
            if j.idempotency_key is None:
                out.append(next(plain))
            else:
                out.append(keyed.pop((j.project, j.idempotency_key), None))
        if not self._submit_writes_events:
            tx.many("insert_event", [self._event_row(
                r["id"], 1, now, "submitted", None, "queued", None,
                {"type": r["type"], "queue": r["queue"],
                 "idempotency_key": r["idempotency_key"]}) for r in out if r is not None])
        return out

    def _setup_rows(self, jobs: Sequence[NewJob], profile: Any,
                    conn: Any) -> tuple[list[str], bool]:
        """The queue rows and whether the price profile a submit must still write. Queue and
        profile rows are never deleted, so once this store has committed one it need not
        write it again (a caller's transaction may still roll back: nothing is skipped)."""
        known = self._known_rows() if conn is None else set()
        queues = sorted({j.queue for j in jobs} - known)
        pin = profile is not None and ("profile", profile.id) not in known
        return queues, pin

    def _known_rows(self) -> set:
        """Queue names and ("profile", id) pairs this store has committed."""
        known = self.__dict__.get("_known")
        if known is None:
            known = self.__dict__.setdefault("_known", set())
        return known

    # --- reads ---------------------------------------------------------------------------

    def get_job(self, job_id: int) -> Job | None:
        with self._read() as tx:
            row = tx.one("get_job", id=job_id)
        return to_job(row) if row else None

    def finished_among(self, ids: Sequence[int]) -> set[int]:
        """Which of ``ids`` are in a terminal state: one read however many jobs are asked."""
        if not ids:
            return set()
        with self._read() as tx:
            rows = tx.all("finished_among", ids=self._id_list_param([int(i) for i in ids]))
        return {int(r["id"]) for r in rows}

    def list_jobs(self, *, projects: Iterable[str] | None = None, state: str | None = None,
                  type: str | None = None, queue: str | None = None, search: str | None = None,
                  before_id: int | None = None, limit: int = 50) -> list[Job]:
        if state is not None:
            state = str(JobState(state))
        with self._read() as tx:
            rows = tx.all("list_jobs", projects=self._list_param(projects), state=state,
                          type=type, queue=queue, search=search, before_id=before_id,
                          limit=limit)
        return [to_job(r) for r in rows]

    def events(self, job_id: int, *, after: int = 0, limit: int = 1000) -> list[Event]:
        with self._read() as tx:
            rows = tx.all("list_events", job_id=job_id, after=after, limit=limit)
        return [to_event(r) for r in rows]

    def attempts(self, job_id: int) -> list[Attempt]:
        with self._read() as tx:
            rows = tx.all("list_attempts", job_id=job_id)
        return [to_attempt(r) for r in rows]
