"""The end of an attempt: a worker reports its outcome under its lease (``finish``), one by
one or many in one transaction. A cancel recorded meanwhile wins (``core.states.finish_target``),
and calls the attempt left open are spent before the job moves on."""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Sequence

from ..core.states import JobState, check_transition, finish_target
from ..errors import LeaseLost
from .accounting import Accounting
from .waits import Waits
from .base import Outcome
from .totals import BUDGET_PAUSES, count_engine
from .tx import Row, Tx


def _plain(outcome: Outcome) -> bool:
    """A plain success: what ``succeed_many`` writes set-wise."""
    return outcome.state == JobState.SUCCEEDED and outcome.kind is None


class Outcomes(Waits, Accounting):
    """``finish`` and ``finish_many``."""

    _succeed_alone = False
    """True where ``succeed_many`` is one statement that also writes the events and attempts
    and reads the clock itself (``now`` None): a batch of plain successes is then that one
    statement outside any transaction."""

    def finish(self, job_id: int, attempt: int, outcome: Outcome, *,
               now: float | None = None) -> JobState:
        """End an attempt under its lease; a cancel recorded meanwhile wins (``finish_target``)."""
        with self._write() as tx:
            now = self._now(tx, now)
            return self._finish_row(tx, self._held(tx, job_id, attempt), attempt, outcome, now)

    def finish_many(self, items: Sequence[tuple[int, int, Outcome]], *,
                    now: float | None = None) -> list[JobState | LeaseLost]:
        """``finish`` for many attempts in ONE transaction (one commit for a whole batch of
        outcomes); where ``_succeed_alone``, a batch of plain successes is one statement, and
        what it could not write (a lost lease, a call left open, a child job) one transaction
        after it. A lost lease is reported in its slot, not raised: it writes nothing and does
        not hold back the others."""
        if self._succeed_alone and all(_plain(o) for _, _, o in items):
            with self._read() as tx:  # one statement, atomic by itself: no BEGIN/COMMIT
                fast, gathers = self._succeed_plain(tx, items, now)
            if gathers:
                with self._write() as tx:
                    self._wake_gathers(tx, gathers, self._now(tx, now))
            if len(fast) == len(items):
                return [JobState.SUCCEEDED] * len(items)
            rest = iter(self._finish_each([it for i, it in enumerate(items) if i not in fast],
                                          now))
            return [JobState.SUCCEEDED if i in fast else next(rest) for i in range(len(items))]
        with self._write() as tx:
            now = self._now(tx, now)
            fast, gathers = self._succeed_plain(tx, items, now)
            self._wake_gathers(tx, gathers, now)
            return self._finish_rest(tx, items, fast, now)

    def _finish_each(self, items: Sequence[tuple[int, int, Outcome]],
                     now: float | None) -> list[JobState | LeaseLost]:
        """The outcomes ``succeed_many`` did not write, one by one in one transaction."""
        with self._write() as tx:
            return self._finish_rest(tx, items, set(), self._now(tx, now))

    def _finish_rest(self, tx: Tx, items: Sequence[tuple[int, int, Outcome]], fast: set[int],
                     now: float) -> list[JobState | LeaseLost]:
        """Finish ``items`` but those at the positions in ``fast`` (written already)."""
        out: list[JobState | LeaseLost] = []
        for i, (job_id, attempt, outcome) in enumerate(items):
            if i in fast:
                out.append(JobState.SUCCEEDED)
                continue
            row = tx.one("lock_job", id=job_id)
            if row is None or row["lease_attempt"] != attempt:
                out.append(LeaseLost(f"job {job_id}: lease {attempt} is no longer held",
                                     job_id=job_id))
                continue
            out.append(self._finish_row(tx, row, attempt, outcome, now))
        return out

    def _succeed_plain(self, tx: Tx, items: Sequence[tuple[int, int, Outcome]],
                       now: float | None) -> tuple[set[int], list[int]]:
        """Write the plain successes among ``items`` (a ``running`` job under its lease with
        no call left open) set-wise; returns their positions, and the parents whose gathers
        the children among them completed. The rest go one by one.
        ``succeed_many`` moves the rows; a backend may also write their events and attempts
        in that same statement (PostgreSQL), otherwise they follow here."""
        wanted = [i for i, (_, _, out) in enumerate(items) if _plain(out)]
        if not wanted:
            return set(), []
        assert now is not None, "the clock is read in the caller's transaction"
        check_transition(JobState.RUNNING, JobState.SUCCEEDED)
        rows = tx.all("succeed_many", items=json.dumps(
            [[items[i][0], items[i][1], items[i][2].result_json] for i in wanted]), now=now)
        seq = {int(r["id"]): int(r["event_seq"]) for r in rows}
        done = [i for i in wanted if items[i][0] in seq]
        tx.many("insert_event", [
            self._event_row(job_id, seq[job_id], now, "succeeded", "running", "succeeded",
                            attempt, outcome.data)
            for job_id, attempt, outcome in (items[i] for i in done)])
        tx.many("finish_attempt", [
            {"job_id": items[i][0], "attempt": items[i][1], "now": now, "outcome": "succeeded",
             "error_code": None, "error_summary": None} for i in done])
        children = [int(r["id"]) for r in rows if r["parent_id"] is not None]
        gathers = [] if not children else [
            int(r["job_id"]) for r in tx.all("wait_children_done_many",
                                             ids=self._array_param(children))
            if int(r["pending"]) <= 0]
        return set(done), gathers

    def _finish_row(self, tx: Tx, row: Row, attempt: int, outcome: Outcome,
                    now: float) -> JobState:
        job_id = row["id"]
        self._settle_orphans(tx, row, now)
        to = finish_target(row["state"], outcome.state)
        if to == JobState.WAITING:
            to = self._park(tx, row, outcome, now)
            tx.run("finish_attempt", job_id=job_id, attempt=attempt, now=now, outcome="waiting",
                   error_code=None, error_summary=None)
            return to
        changes: dict[str, Any] = {}
        if to == JobState.SUCCEEDED:
            changes.update(result=outcome.result_json, error_code=None, error_summary=None)
        elif (to in (JobState.FAILED, JobState.RETRY_WAIT, JobState.PAUSED)
              and outcome.error_code is not None):
            changes.update(error_code=outcome.error_code, error_summary=outcome.error_summary)
        if to == JobState.CANCELLED:  # whatever the attempt reported, the job was cancelled
            changes.update(error_code="cancelled",
                           error_summary=outcome.error_summary or "cancelled while running")
        if to == JobState.RETRY_WAIT:
            changes["run_after"] = now + outcome.delay_s
        if to == JobState.PAUSED and outcome.error_code == "period_budget_exhausted":
            changes["run_after"] = float(outcome.data["resets_at"])  # when the sweep resumes it
        if to == JobState.QUEUED:  # handed back on shutdown: not the job's fault
            changes.update(run_after=now, max_attempts=max(row["max_attempts"],
                                                           row["attempt_count"] + 1))
        data = dict(outcome.data)
        if to == JobState.RETRY_WAIT:
            data["delay_s"] = round(outcome.delay_s, 3)
        if outcome.error_code and to != JobState.SUCCEEDED:
            data.update(error_code=outcome.error_code, error_summary=outcome.error_summary)
        self._transition(tx, row, to, now=now, kind=outcome.kind, data=data, **changes)
        ended = str(to) if outcome.kind is None else outcome.kind
        tx.run("finish_attempt", job_id=job_id, attempt=attempt, now=now, outcome=ended,
               error_code=outcome.error_code if to != JobState.SUCCEEDED else None,
               error_summary=outcome.error_summary if to != JobState.SUCCEEDED else None)
        if ended == "budget_exhausted":
            count_engine(tx, BUDGET_PAUSES, 1)
        return to
