"""The engine's storage logic, written once over named SQL; backends supply SQL and transactions.

Each backend (``sqlite/``, ``postgres/``) keeps its statements in ``queries.sql`` and provides
``_write()``/``_read()`` transactions whose handle runs a statement by name. The rules live
here: every transition is checked against ``core.states``, made as a compare-and-set on the
job's state and lease token, and appends its event (``seq = last + 1``) in the same
transaction.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Iterable, Iterator, Protocol, Sequence

from ..core.budget import COUNTER_FIELDS, Budget
from ..core.pricing import PriceProfile
from ..core.states import LEASED_STATES, TERMINAL, JobState, check_transition, expiry_target
from ..core.states import finish_target, operator_target
from ..errors import IdempotencyConflict, JobNotFound, JobStateError, LeaseLost
from ..records import Attempt, Event, Job
from .accounting import AccountingMixin
from .calls import CallsMixin
from .admin import AdminMixin
from .base import CallerConnection, Claim, NewJob, Outcome
from .checkpoints import CheckpointMixin
from .ratelimits import RateLimitMixin
from .rows import RowsMixin, _json, _ts

_encode = json.JSONEncoder(separators=(",", ":")).encode

_MUTABLE = ("state", "stage", "run_after", "max_attempts", "result", "error_code",
            "error_summary", "lease_owner", "lease_expires_at", "lease_token", "budget",
            "finished_at")


class Tx(Protocol):
    def one(self, _q: str, **params: Any) -> dict[str, Any] | None: ...
    def all(self, _q: str, **params: Any) -> list[dict[str, Any]]: ...
    def run(self, _q: str, **params: Any) -> int: ...
    def many(self, _q: str, rows: Sequence[dict[str, Any]]) -> None: ...


class SQLStore(RowsMixin, CallsMixin, AccountingMixin, CheckpointMixin, RateLimitMixin,
               AdminMixin, ABC):
    """Store logic shared by every SQL backend."""

    url: str

    # --- what a backend provides --------------------------------------------------------------

    @abstractmethod
    def _write(self, conn: Any = None) -> AbstractContextManager[Tx]: ...

    @abstractmethod
    def _read(self) -> AbstractContextManager[Tx]: ...

    @abstractmethod
    def _now(self, tx: Tx, now: float | None) -> float: ...

    @contextmanager
    def transaction(self, *, savepoints: bool = True) -> Iterator[None]:
        """One write transaction: store writes made on this thread inside it join it, each in
        its own savepoint (unless ``savepoints=False``: then a failing write must abort the
        whole transaction), and all commit together (group commit)."""
        with self._write(savepoints=savepoints):
            yield

    def _json_param(self, value: Any) -> Any:
        """How a JSON column's value is bound (text by default)."""
        if value is None:
            return None
        return "{}" if value == {} else _encode(value)

    def _list_param(self, values: Iterable[str] | None) -> Any:
        return None if values is None else json.dumps(list(values))

    def _time_param(self, value: float | None) -> Any:
        return value

    # --- the transition primitive -------------------------------------------------------------

    def _event_row(self, job_id: int, seq: int, at: float, kind: str, src: str | None,
                   dst: str | None, attempt: int | None, data: dict[str, Any] | None) -> dict:
        return {"job_id": job_id, "seq": seq, "at": self._time_param(at), "kind": kind,
                "from_state": src, "to_state": dst, "attempt": attempt,
                "data": self._json_param(data or {})}

    def _transition(self, tx: Tx, row: dict[str, Any], to: JobState, *, now: float,
                    kind: str | None = None, data: dict[str, Any] | None = None,
                    **changes: Any) -> dict[str, Any]:
        """Move a locked job row to ``to`` and append its event; returns the new row values."""
        src = JobState(row["state"])
        check_transition(src, to, row["id"])
        new = self._mutable(row)
        new.update(changes)
        new["state"] = str(to)
        if to not in LEASED_STATES:
            new.update(lease_owner=None, lease_expires_at=None, lease_token=None)
        new["finished_at"] = now if to in TERMINAL else None
        seq = self._update_row(tx, row["id"], new, now)
        tx.run("insert_event", **self._event_row(row["id"], seq, now, kind or str(to),
                                                 str(src), str(to), row.get("lease_token")
                                                 or row.get("attempt_count"), data))
        return new

    def _mutable(self, row: dict[str, Any]) -> dict[str, Any]:
        """A locked row's mutable columns, times as unix seconds and JSON as parameters."""
        new = {k: row.get(k) for k in _MUTABLE}
        for k in ("run_after", "lease_expires_at", "finished_at"):
            new[k] = _ts(new[k])
        if isinstance(new["budget"], (dict, list)):
            new["budget"] = self._json_param(new["budget"])
        if new["result"] is not None and not isinstance(new["result"], (str, bytes)):
            new["result"] = self._json_param(new["result"])
        return new

    def _update_row(self, tx: Tx, job_id: int, new: dict[str, Any], now: float) -> int:
        """Write ``new`` over the job's mutable columns; returns the job's next event seq."""
        params = dict(new, id=job_id, now=self._time_param(now))
        for k in ("run_after", "lease_expires_at", "finished_at"):
            params[k] = self._time_param(params[k])
        return tx.one("update_job", **params)["event_seq"]

    def _locked(self, tx: Tx, job_id: int, projects: Iterable[str] | None = None) -> dict:
        row = tx.one("lock_job", id=job_id)
        if row is None or (projects is not None and row["project"] not in set(projects)):
            raise JobNotFound(f"job {job_id} not found", job_id=job_id)
        return row

    def _held(self, tx: Tx, job_id: int, token: int) -> dict:
        row = tx.one("lock_job", id=job_id)
        if row is None or row["lease_token"] != token:
            raise LeaseLost(f"job {job_id}: lease {token} is no longer held", job_id=job_id)
        return row

    # --- submission ---------------------------------------------------------------------------

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
                tx.run("ensure_queue", name=queue, now=self._time_param(now))
            for spec, row in zip(jobs, self._insert_jobs(tx, jobs, now)):
                if row is not None:
                    out.append((self._job(row), True))
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
                out.append((self._job(existing), False))
        if conn is None:
            known = self._known_rows()
            known.update(queues)
            if pin:
                known.add(("profile", profile.id))
        return out

    _submit_writes_events = False
    """True where ``insert_jobs`` also writes the submitted events (PostgreSQL)."""

    def _insert_jobs(self, tx: Tx, jobs: Sequence[NewJob], now: float) -> list[dict | None]:
        """Insert ``jobs`` with one statement; the new row at each position, or None where
        the idempotency key already existed (or came earlier in this batch). Rows are
        matched back by key, and unkeyed rows by id order, which follows insertion order."""
        rows = tx.all("insert_jobs", jobs=_encode([{
            "ord": i, "type": j.type, "project": j.project, "queue": j.queue, "priority": j.priority,
            "run_after": j.run_after, "max_attempts": j.max_attempts,
            "safe_to_retry": j.safe_to_retry, "idempotency_key": j.idempotency_key,
            "input_config_hash": j.input_config_hash, "payload": j.payload_json,
            "budget": self._json_param(j.budget.to_dict()), "price_profile": j.price_profile,
            "estimated_cost_usd": j.estimated_cost_usd, "parent_id": j.parent_id}
            for i, j in enumerate(jobs)]), now=self._time_param(now))
        keyed = {(r["project"], r["idempotency_key"]): r for r in rows
                 if r["idempotency_key"] is not None}
        plain = iter(sorted((r for r in rows if r["idempotency_key"] is None),
                            key=lambda r: r["id"]))
        out: list[dict | None] = []
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

    # --- reads --------------------------------------------------------------------------------

    def get_job(self, job_id: int) -> Job | None:
        with self._read() as tx:
            row = tx.one("get_job", id=job_id)
        return self._job(row) if row else None

    def list_jobs(self, *, projects: Iterable[str] | None = None, state: str | None = None,
                  type: str | None = None, queue: str | None = None, search: str | None = None,
                  before_id: int | None = None, limit: int = 50) -> list[Job]:
        if state is not None:
            state = str(JobState(state))
        with self._read() as tx:
            rows = tx.all("list_jobs", projects=self._list_param(projects), state=state,
                          type=type, queue=queue, search=search, before_id=before_id,
                          limit=limit)
        return [self._job(r) for r in rows]

    def events(self, job_id: int, *, after: int = 0, limit: int = 1000) -> list[Event]:
        with self._read() as tx:
            rows = tx.all("list_events", job_id=job_id, after=after, limit=limit)
        return [self._event(r) for r in rows]

    def attempts(self, job_id: int) -> list[Attempt]:
        with self._read() as tx:
            rows = tx.all("list_attempts", job_id=job_id)
        return [self._attempt(r) for r in rows]

    # --- workers and leases -------------------------------------------------------------------

    def claim(self, worker_id: str, *, queues: Sequence[str] | None, limit: int,
              lease_ttl: float, now: float | None = None, start: bool = False) -> list[Claim]:
        """Lease up to ``limit`` eligible jobs. With ``start`` (what a worker that runs them at
        once asks for) the first attempts also begin in the same statement: ``leased`` then
        ``running``, two events each, one commit for the whole batch. A re-attempt (a job with
        an earlier attempt) is left ``leased``: its start must first settle what that attempt
        left open."""
        if limit <= 0:
            return []
        with self._write() as tx:
            now = self._now(tx, now)
            at = self._time_param(now)
            rows = tx.all("claim_jobs", worker_id=worker_id, queues=self._list_param(queues),
                          limit=limit, lease_ttl=lease_ttl, now=at, start=start)
            if not rows:
                return []
            rows.sort(key=lambda r: (r["priority"], _ts(r["run_after"]), r["id"]))
            if start:
                check_transition(JobState.LEASED, JobState.RUNNING)
            events, attempts = [], []
            for r in rows:
                started = r["state"] == "running"
                token = r["lease_token"]
                seq = r["event_seq"] - 1 if started else r["event_seq"]
                attempts.append({"job_id": r["id"], "attempt": token, "worker_id": worker_id,
                                 "claimed_at": at, "started_at": at if started else None})
                events.append(self._event_row(
                    r["id"], seq, now, "leased", "queued", "leased", token,
                    {"worker_id": worker_id, "waited_s": round(now - _ts(r["run_after"]), 6)}))
                if started:
                    events.append(self._event_row(r["id"], seq + 1, now, "running", "leased",
                                                  "running", token, None))
            tx.many("insert_attempt", attempts)
            tx.many("insert_event", events)
            self._read_counters(tx, rows)
        return [Claim(self._job(r), int(r["lease_token"]), started=r["state"] == "running")
                for r in rows]

    def _read_counters(self, tx: Tx, rows: list[dict[str, Any]]) -> None:
        """Add the job accumulators to claimed rows, so a claim's Job is what ``get_job``
        returns. Only a re-attempt can have any: the rows are created by a running attempt."""
        for r in rows:
            if r["lease_token"] > 1:
                b = tx.one("job_budget", key=str(r["id"]))
                if b is not None:
                    r.update({name: b[name] for name in COUNTER_FIELDS})

    def _id_list_param(self, ids: Sequence[int]) -> Any:
        return json.dumps(list(ids))

    def start(self, job_id: int, token: int, *, now: float | None = None) -> JobState:
        """leased -> running under the lease. Returns the state the job is now in: ``running``,
        or ``cancelling``/``pausing`` when an operator got there first."""
        with self._write() as tx:
            now = self._now(tx, now)
            row = self._held(tx, job_id, token)
            tx.run("start_attempt", job_id=job_id, attempt=token, now=self._time_param(now))
            state = JobState(row["state"])
            orphans = self._settle_orphans(tx, row, now)
            if orphans:
                self._note(tx, job_id, "unconfirmed_calls_settled", now, token, {"calls": orphans})
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
                          now=self._time_param(now),
                          jobs=None if jobs is None else self._id_list_param(list(jobs)))
            tx.run("touch_worker", worker_id=worker_id, now=self._time_param(now))
        return {int(r["id"]): (int(r["lease_token"]), JobState(r["state"])) for r in rows}

    def lease_state(self, job_id: int, token: int) -> JobState:
        with self._read() as tx:
            row = tx.one("lease_state", id=job_id)
        if row is None or row["lease_token"] != token:
            raise LeaseLost(f"job {job_id}: lease {token} is no longer held", job_id=job_id)
        return JobState(row["state"])

    def set_stage(self, job_id: int, token: int, stage: str | None) -> None:
        with self._write() as tx:
            n = tx.run("set_stage", id=job_id, token=token, stage=stage,
                       now=self._time_param(self._now(tx, None)))
        if n != 1:
            raise LeaseLost(f"job {job_id}: lease {token} is no longer held", job_id=job_id)

    def append_event(self, job_id: int, kind: str, data: dict[str, Any], *,
                     token: int | None = None) -> int:
        with self._write() as tx:
            now = self._now(tx, None)
            if token is not None:
                self._held(tx, job_id, token)
            row = tx.one("bump_event_seq", id=job_id)
            if row is None:
                raise JobNotFound(f"job {job_id} not found", job_id=job_id)
            tx.run("insert_event", **self._event_row(job_id, row["event_seq"], now, kind,
                                                     None, None, token, data))
            return int(row["event_seq"])

    def finish(self, job_id: int, token: int, outcome: Outcome, *,
               now: float | None = None) -> JobState:
        """End an attempt under its lease; a cancel recorded meanwhile wins (``finish_target``)."""
        with self._write() as tx:
            now = self._now(tx, now)
            return self._finish_row(tx, self._held(tx, job_id, token), token, outcome, now)

    def finish_many(self, items: Sequence[tuple[int, int, Outcome]], *,
                    now: float | None = None) -> list[JobState | LeaseLost]:
        """``finish`` for many attempts in ONE transaction (one commit for a whole batch of
        outcomes). A lost lease is reported in its slot, not raised: it writes nothing and
        does not hold back the others."""
        out: list[JobState | LeaseLost] = []
        with self._write() as tx:
            now = self._now(tx, now)
            fast = self._succeed_plain(tx, items, now)
            for i, (job_id, token, outcome) in enumerate(items):
                if i in fast:
                    out.append(JobState.SUCCEEDED)
                    continue
                row = tx.one("lock_job", id=job_id)
                if row is None or row["lease_token"] != token:
                    out.append(LeaseLost(f"job {job_id}: lease {token} is no longer held",
                                         job_id=job_id))
                    continue
                out.append(self._finish_row(tx, row, token, outcome, now))
        return out

    def _succeed_plain(self, tx: Tx, items: Sequence[tuple[int, int, Outcome]],
                       now: float) -> set[int]:
        """Write the plain successes among ``items`` (a ``running`` job under its lease with
        no call left open) set-wise; returns their positions. The rest go one by one.
        ``succeed_many`` moves the rows; a backend may also write their events and attempts
        in that same statement (PostgreSQL), otherwise they follow here."""
        wanted = [i for i, (_, _, out) in enumerate(items)
                  if out.state == JobState.SUCCEEDED and out.kind is None]
        if not wanted:
            return set()
        check_transition(JobState.RUNNING, JobState.SUCCEEDED)
        at = self._time_param(now)
        rows = tx.all("succeed_many", items=json.dumps(
            [[items[i][0], items[i][1], items[i][2].result_json] for i in wanted]), now=at)
        seq = {int(r["id"]): int(r["event_seq"]) for r in rows}
        done = [i for i in wanted if items[i][0] in seq]
        tx.many("insert_event", [
            self._event_row(job_id, seq[job_id], now, "succeeded", "running", "succeeded",
                            token, outcome.data)
            for job_id, token, outcome in (items[i] for i in done)])
        tx.many("finish_attempt", [
            {"job_id": items[i][0], "attempt": items[i][1], "now": at, "outcome": "succeeded",
             "error_code": None, "error_summary": None} for i in done])
        return set(done)

    def _finish_row(self, tx: Tx, row: dict[str, Any], token: int, outcome: Outcome,
                    now: float) -> JobState:
        job_id = row["id"]
        self._settle_orphans(tx, row, now)
        to = finish_target(row["state"], outcome.state)
        changes: dict[str, Any] = {}
        if to == JobState.SUCCEEDED:
            changes.update(result=outcome.result_json, error_code=None, error_summary=None)
        elif to in (JobState.FAILED, JobState.RETRY_WAIT, JobState.PAUSED):
            if outcome.error_code is not None:
                changes.update(error_code=outcome.error_code,
                               error_summary=outcome.error_summary)
        if to == JobState.CANCELLED:  # whatever the attempt reported, the job was cancelled
            changes.update(error_code="cancelled",
                           error_summary=outcome.error_summary or "cancelled while running")
        if to == JobState.RETRY_WAIT:
            changes["run_after"] = now + outcome.delay_s
        if to == JobState.QUEUED:  # handed back on shutdown: not the job's fault
            changes.update(run_after=now, max_attempts=max(row["max_attempts"],
                                                           row["attempt_count"] + 1))
        data = dict(outcome.data)
        if to == JobState.RETRY_WAIT:
            data["delay_s"] = round(outcome.delay_s, 3)
        if outcome.error_code and to != JobState.SUCCEEDED:
            data.update(error_code=outcome.error_code, error_summary=outcome.error_summary)
        self._transition(tx, row, to, now=now, kind=outcome.kind, data=data, **changes)
        tx.run("finish_attempt", job_id=job_id, attempt=token, now=self._time_param(now),
               outcome=str(to) if outcome.kind is None else outcome.kind,
               error_code=outcome.error_code if to != JobState.SUCCEEDED else None,
               error_summary=outcome.error_summary if to != JobState.SUCCEEDED else None)
        return to

    # --- maintenance --------------------------------------------------------------------------

    def expire_leases(self, *, now: float | None = None,
                      limit: int = 500) -> list[tuple[int, JobState]]:
        """One rescuer step: every lease past its expiry (by the database clock) is taken back."""
        out: list[tuple[int, JobState]] = []
        with self._write() as tx:
            now = self._now(tx, now)
            for row in tx.all("expired_leases", now=self._time_param(now), limit=limit):
                to, code = expiry_target(
                    row["state"], safe_to_retry=bool(row["safe_to_retry"]),
                    attempts_left=row["attempt_count"] < row["max_attempts"])
                changes: dict[str, Any] = {}
                summary = (f"lease of worker {row['lease_owner']} expired "
                           f"(attempt {row['lease_token']} of {row['max_attempts']})")
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
                tx.run("finish_attempt", job_id=row["id"], attempt=row["lease_token"],
                       now=self._time_param(now), outcome="lease_expired",
                       error_code="interrupted", error_summary=summary)
                out.append((int(row["id"]), to))
        return out

    def promote_due(self, *, now: float | None = None, limit: int = 1000) -> int:
        """One stager step: retry_wait jobs whose backoff has elapsed become queued."""
        with self._write() as tx:
            now = self._now(tx, now)
            rows = tx.all("due_retries", now=self._time_param(now), limit=limit)
            for row in rows:
                self._transition(tx, row, JobState.QUEUED, now=now, kind="retry_due")
        return len(rows)

    def prune(self, *, older_than_s: float, now: float | None = None) -> int:
        with self._write() as tx:
            now = self._now(tx, now)
            cutoff = self._time_param(now - older_than_s)
            n = tx.run("prune_jobs", cutoff=cutoff)
            # Only old blobs: a fresh one may belong to a checkpoint about to commit.
            tx.run("prune_blobs", cutoff=cutoff)
            return n

    # --- operators ----------------------------------------------------------------------------

    def control(self, job_id: int, action: str, *, projects: Iterable[str] | None = None,
                reason: str | None = None) -> Job:
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._locked(tx, job_id, projects)
            to = operator_target(action, row["state"])
            changes: dict[str, Any] = {}
            if to == JobState.QUEUED:
                changes.update(run_after=now, max_attempts=max(row["max_attempts"],
                                                              row["attempt_count"] + 1))
                if action in ("retry", "requeue", "resume"):
                    changes.update(error_code=None, error_summary=None)
            if to == JobState.CANCELLED and row["state"] != "failed":
                changes.update(error_code="cancelled", error_summary=reason or "cancelled")
            data = {"action": action}
            if reason:
                data["reason"] = reason
            self._transition(tx, row, to, now=now, kind=action, data=data, **changes)
            return self._job(tx.one("get_job", id=job_id))

    def set_budget(self, job_id: int, budget: Budget, *,
                   projects: Iterable[str] | None = None) -> Job:
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._locked(tx, job_id, projects)
            if JobState(row["state"]) in TERMINAL and row["state"] != "failed":
                raise JobStateError(f"job {job_id} is {row['state']}; its budget is final")
            limits = Budget.from_dict(_json(row["budget"]) or {}).merged(budget)
            self._set_limits(tx, row, limits, now)
            return self._job(tx.one("get_job", id=job_id))

    def _set_limits(self, tx: Tx, row: dict[str, Any], limits: Budget, now: float) -> None:
        new = dict(self._mutable(row), budget=self._json_param(limits.to_dict()))
        seq = self._update_row(tx, row["id"], new, now)
        tx.run("insert_event", **self._event_row(row["id"], seq, now, "budget_changed", None,
                                                 None, None, {"limits": limits.to_dict()}))
