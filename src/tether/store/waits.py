"""Waits in the store: a job leaves its lease to wait for children, a timer or a signal, and
is queued again when the wait is satisfied (``running -> waiting -> queued``; docs/design.md,
"The job state machine").

Whether a wait is satisfied is decided from durable rows (``core.waits.decide``) inside the
transaction that could satisfy it: a child's move to a terminal state, a signal's arrival, the
waiting job's own finish (which re-decides under its row lock, so a child that finished while
the parent was still running is not missed) and the periodic sweep (``wake_due``, the
backstop). A wake closes the wait with its value, consumes the signal it used and queues the
job, all in that one transaction: a crash leaves either everything or nothing.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from ..clock import LAST_TS
from ..core.states import TERMINAL, JobState
from ..core.waits import (FAILED_CHILD_STATES, Wake, WaitSpec, child_outcome, decide,
                          recheck_at)
from ..errors import JobNotFound, JobStateError
from ..records import Job, Wait
from .base import Outcome
from .rows import as_seconds, to_job, to_wait
from .transitions import Transitions
from .tx import Row, Tx, present


class Waits(Transitions):
    """``begin_wait``, ``get_wait``, ``waits``, ``list_waiting``, ``send_signal``,
    ``wake_due`` and the wake hooks."""

    def get_wait(self, job_id: int, key: str) -> Wait | None:
        """The wait ``key`` of the job, as its replay needs it: a gather's ``children`` are
        not read (``child_count`` says how many; ``wait_results`` reads them in pages)."""
        with self._read() as tx:
            row = tx.one("wait_get", job_id=job_id, key=key)
        return None if row is None else to_wait(row)

    def waits(self, job_id: int, *, projects: Iterable[str] | None = None) -> list[Wait]:
        """Every wait of a job, oldest first, a gather's children listed (for status pages
        and operators)."""
        with self._read() as tx:
            self._visible(tx, job_id, projects)
            rows = tx.all("waits_of", job_id=job_id)
            kids = self._kids(tx, job_id, rows)
            return [to_wait(r, k) for r, k in zip(rows, kids, strict=True)]

    def current_wait(self, job_id: int, *, projects: Iterable[str] | None = None,
                     children: bool = True) -> Wait | None:
        """The open wait the job is blocked on (the one its latest attempt began), if any;
        ``children`` False: a gather's children are not read (``gather_progress`` counts)."""
        with self._read() as tx:
            self._visible(tx, job_id, projects)
            row = tx.one("wait_current", job_id=job_id)
            if row is None:
                return None
            return to_wait(row, self._kids(tx, job_id, [row])[0] if children else ())

    def gather_progress(self, job_id: int, key: str) -> tuple[int, int] | None:
        """A gather's children, and how many of them have ended, from the counts its row
        keeps (one row read, however many children). The counts are the cache each child's
        end decrements and every recount rewrites: for showing, never for deciding. None:
        not a gather."""
        with self._read() as tx:
            row = tx.one("wait_get", job_id=job_id, key=key)
        if row is None or row["kind"] != "children" or row.get("child_count") is None:
            return None
        total = int(row["child_count"])
        pending = total if row.get("pending") is None else int(row["pending"])
        return total, min(total, max(0, total - pending))

    def wait_results(self, job_id: int, key: str, *, after: int = 0,
                     limit: int = 1000) -> list[dict[str, Any]]:
        """One page of a gather's children in its order, from position ``after``: each
        child as ``core.waits.child_outcome`` gives it, with its ``pos``. One read a page."""
        with self._read() as tx:
            rows = tx.all("wait_results", job_id=job_id, key=key, after=after, limit=limit)
        return [dict(child_outcome(r), pos=int(r["pos"])) for r in rows]

    @staticmethod
    def _kids(tx: Tx, job_id: int, rows: list[Row]) -> list[tuple[int, ...]]:
        if not any(r["kind"] == "children" for r in rows):
            return [() for _ in rows]
        ids: dict[str, list[int]] = {}
        for r in tx.all("wait_child_ids", job_id=job_id):
            ids.setdefault(r["key"], []).append(int(r["child_id"]))
        return [tuple(ids.get(r["key"], ())) for r in rows]

    def list_waiting(self, kind: str, *, projects: Iterable[str] | None = None,
                     type: str | None = None, queue: str | None = None,
                     search: str | None = None, before_id: int | None = None,
                     limit: int = 50) -> list[Job]:
        """Waiting jobs blocked on an open wait of ``kind`` (``"signal"``: the jobs waiting
        for somebody's answer), newest first; filters and paging as ``list_jobs``."""
        with self._read() as tx:
            rows = tx.all("list_waiting_jobs", kind=kind, projects=self._list_param(projects),
                          type=type, queue=queue, search=search, before_id=before_id,
                          limit=limit)
        return [to_job(r) for r in rows]

    def begin_wait(self, job_id: int, attempt: int, spec: WaitSpec, *,
                   now: float | None = None) -> Wait:
        """Record the wait ``spec`` under the lease (once per key: a replay finds it) and
        decide it at once. A satisfied wait comes back ``done`` and the job runs on; an open
        one means the job must end its attempt as ``waiting`` (``JobWaiting``)."""
        with self._write() as tx:
            now = self._now(tx, now)
            self._held(tx, job_id, attempt)
            row = tx.one("wait_get", job_id=job_id, key=spec.key)
            if row is None:
                wake_at = spec.wake_at
                if wake_at is None and spec.delay_s is not None:
                    wake_at = min(now + max(0.0, float(spec.delay_s)), LAST_TS)
                tx.run("wait_insert", job_id=job_id, key=spec.key, kind=spec.kind,
                       wake_at=wake_at,
                       child_count=len(spec.children) if spec.kind == "children" else None,
                       fail_mode=spec.fail_mode if spec.kind == "children" else None,
                       signal=spec.signal, prompt=spec.prompt,
                       schema=self._json_param(spec.schema), attempt=attempt, now=now)
                data: dict[str, Any] = {"key": spec.key, "kind": spec.kind}
                if wake_at is not None:
                    data["wake_at"] = wake_at
                if spec.signal:
                    data["signal"] = spec.signal
                if spec.children:
                    data["children"] = len(spec.children)
                    self._insert_children(tx, job_id, spec.key, spec.children)
                self._note(tx, job_id, "wait", now, attempt, data)
                row = present(tx.one("wait_get", job_id=job_id, key=spec.key))
            elif row["status"] == "open":
                tx.run("wait_touch", job_id=job_id, key=spec.key, attempt=attempt)
            if row["status"] == "open":
                wake = self._decide(tx, row, now)
                if wake is not None:
                    self._close_wait(tx, row, wake, now)
                    self._note(tx, job_id, "wait_satisfied", now, attempt,
                               {"key": spec.key, "outcome": wake.outcome})
                    row = present(tx.one("wait_get", job_id=job_id, key=spec.key))
            return to_wait(row)

    def send_signal(self, job_id: int, name: str, value: Any = None, *,
                    projects: Iterable[str] | None = None) -> Job:
        """Put a signal in the job's mailbox; a job waiting for it is woken in this same
        transaction. A signal sent before the job waits is kept and consumed by the first
        wait for that name (each signal by exactly one wait)."""
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._locked(tx, job_id, projects)
            if JobState(row["state"]) in TERMINAL:
                raise JobStateError(f"job {job_id} is {row['state']}; it takes no signals",
                                    job_id=job_id, state=row["state"])
            tx.run("signal_insert", job_id=job_id, name=name, value=self._json_param(value),
                   now=now)
            self._note(tx, job_id, "signal", now, None, {"name": name})
            if row["state"] == JobState.WAITING:
                self._wake_if_ready(tx, row, now)
            return to_job(present(tx.one("get_job", id=job_id)))

    def wake_due(self, *, now: float | None = None, limit: int = 500) -> int:
        """One sweep step: waiting jobs whose recheck time has come are decided again —
        timers fire, signal waits time out, and any wake a crash could have missed happens.
        Returns how many were woken."""
        woken = 0
        with self._write() as tx:
            now = self._now(tx, now)
            for row in tx.all("waiting_due", now=now, limit=limit):
                if self._wake_if_ready(tx, row, now):
                    woken += 1
        return woken

    # --- hooks of the other parts ------------------------------------------------------------

    _CHILD_BATCH = 5_000

    def _insert_children(self, tx: Tx, job_id: int, key: str, ids: tuple[int, ...]) -> None:
        for i in range(0, len(ids), self._CHILD_BATCH):
            tx.run("wait_children_insert", job_id=job_id, key=key, offset=i,
                   ids=self._array_param(ids[i:i + self._CHILD_BATCH]))

    def _child_finished(self, tx: Tx, child_id: int, state: str, now: float) -> None:
        """Count the child's end in each open gather waiting for it (O(1) each; the parent's
        row is not touched). The gather a count completes (or, fail-fast, a failure
        decides) wakes its parent here, unless another transaction holds the parent: that
        can only be the parent parking, which counts the children again after this commits."""
        failed = 1 if state in FAILED_CHILD_STATES else 0
        for w in tx.all("wait_child_done", child_id=child_id, failed=failed):
            if int(w["pending"]) > 0 and not (w["fail_mode"] == "fast" and int(w["failed"])):
                continue
            parent = tx.one("lock_job_if_free", id=w["job_id"])
            if parent is not None and parent["state"] == JobState.WAITING:
                self._wake_if_ready(tx, parent, now)

    def _wake_gathers(self, tx: Tx, parents: list[int], now: float) -> None:
        """Wake the parents whose gathers a batch of children completed (``_child_finished``
        for a batch: a parent another transaction holds is parking, and counts again)."""
        for parent_id in sorted(set(parents)):
            parent = tx.one("lock_job_if_free", id=parent_id)
            if parent is not None and parent["state"] == JobState.WAITING:
                self._wake_if_ready(tx, parent, now)

    def _park(self, tx: Tx, row: Row, outcome: Outcome, now: float) -> JobState:
        """Move a running job that reported ``waiting``: to ``waiting`` until its current
        wait is satisfied, or straight back to ``queued`` if it already is. Either way the
        attempt does not use up the job's retries (``max_attempts`` grows by one)."""
        allowance = max(int(row["max_attempts"]), int(row["attempt_count"])) + 1
        wait, wake = self._current(tx, row["id"], now)
        if wait is not None and wake is None:
            self._transition(tx, row, JobState.WAITING, now=now, kind="waiting",
                             data={**outcome.data, "key": wait["key"], "wait": wait["kind"]},
                             run_after=recheck_at(_seconds(wait), now, parked=True),
                             max_attempts=allowance)
            return JobState.WAITING
        self._requeue(tx, row, wait, wake, now, dict(outcome.data), max_attempts=allowance)
        return JobState.QUEUED

    # --- deciding and closing ------------------------------------------------------------------

    def _wake_if_ready(self, tx: Tx, row: Row, now: float) -> bool:
        wait, wake = self._current(tx, row["id"], now)
        if wait is not None and wake is None:
            due = recheck_at(_seconds(wait), now)
            if as_seconds(row["run_after"]) != due:
                tx.run("set_run_after", id=row["id"], run_after=due)
            return False
        self._requeue(tx, row, wait, wake, now, {})
        return True

    def _current(self, tx: Tx, job_id: int, now: float) -> tuple[Row | None, Wake | None]:
        """The wait the job is blocked on (None: none open) and, if satisfied, its wake."""
        wait = tx.one("wait_current", job_id=job_id)
        return wait, None if wait is None else self._decide(tx, wait, now)

    def _requeue(self, tx: Tx, row: Row, wait: Row | None, wake: Wake | None, now: float,
                 data: dict[str, Any], **changes: Any) -> None:
        """Queue the job (``woken``), closing its satisfied wait in the same transaction."""
        if wait is not None and wake is not None:
            self._close_wait(tx, wait, wake, now)
            data = {**data, "key": wait["key"], "outcome": wake.outcome}
        self._transition(tx, row, JobState.QUEUED, now=now, kind="woken", data=data,
                         run_after=now, **changes)

    def _decide(self, tx: Tx, wait: Row, now: float) -> Wake | None:
        """Decide ``wait`` from rows. A gather's children are counted again (its row locked
        first, so a child that ends meanwhile counts itself after this commits) and its
        counts rewritten: the counts a crash or a race lost are found here."""
        if wait["kind"] == "children":
            key = {"job_id": wait["job_id"], "key": wait["key"]}
            tx.one("wait_lock", **key)
            counts = present(tx.one("wait_count", **key))
            pending, failed = int(counts["pending"]), int(counts["failed"])
            if (wait.get("pending"), wait.get("failed")) != (pending, failed):
                tx.run("wait_set_counts", pending=pending, failed=failed, **key)
            failure = tx.one("wait_first_failed", **key) if failed else None
            return decide(_seconds(wait), now=now, pending=pending, failed=failed,
                          failure=failure)
        signal = batch = None
        if wait["kind"] == "provider_batch":
            batch = tx.one("batch_status", job_id=wait["job_id"], key=wait["key"])
        elif wait["kind"] == "signal":
            signal = tx.one("signal_next", job_id=wait["job_id"], name=wait["signal"])
        return decide(_seconds(wait), now=now, signal=signal, batch=batch)

    def _close_wait(self, tx: Tx, wait: Row, wake: Wake, now: float) -> None:
        tx.run("wait_close", job_id=wait["job_id"], key=wait["key"], outcome=wake.outcome,
               value=self._json_param(wake.value), now=now)
        if wake.signal_id is not None:
            tx.run("signal_consume", id=wake.signal_id, key=wait["key"], now=now)

    def _visible(self, tx: Tx, job_id: int, projects: Iterable[str] | None) -> None:
        row = tx.one("get_job", id=job_id)
        if row is None or (projects is not None and row["project"] not in set(projects)):
            raise JobNotFound(f"job {job_id} not found", job_id=job_id)


def _seconds(wait: Row) -> Row:
    return dict(wait, wake_at=as_seconds(wait.get("wake_at")))
