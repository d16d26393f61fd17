"""A job's state changes and its event log: the primitive every store write builds on.

Every transition is checked against ``core.states``, made as a compare-and-set on the job's
state and lease attempt (the row is locked first: ``_held``/``_locked``), and appends its event
(``seq = last + 1``) in the same transaction. This class also names what each backend
provides: its transactions (``_write``/``_read``), its clock (``_now``) and how a few
parameter types are bound.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import Any
from collections.abc import Iterable, Sequence

from ..core.states import LEASED_STATES, TERMINAL, JobState, check_transition
from ..errors import JobNotFound, LeaseLost
from .base import CallerConnection
from .rows import as_seconds
from .tx import Row, Tx, present

compact_json = json.JSONEncoder(separators=(",", ":")).encode

_MUTABLE = ("state", "stage", "run_after", "max_attempts", "result", "error_code",
            "error_summary", "lease_owner", "lease_expires_at", "lease_attempt", "budget",
            "finished_at")


class Transitions(ABC):
    """The shared base of the store's parts (``sql.SQLStore`` assembles them)."""

    url: str

    # --- what a backend provides ---------------------------------------------------------

    @abstractmethod
    def _write(self, conn: CallerConnection | None = None) -> AbstractContextManager[Tx]:
        """A write transaction (the caller's, with ``conn``)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Tx]:
        """Reads, each statement seeing committed data."""

    @abstractmethod
    def _now(self, tx: Tx, now: float | None) -> float:
        """``now`` if given, else the store's clock (the database's, on PostgreSQL)."""

    def _json_param(self, value: Any) -> Any:
        """How a JSON column's value is bound (text by default)."""
        if value is None:
            return None
        return "{}" if value == {} else compact_json(value)

    def _list_param(self, values: Iterable[str] | None) -> Any:
        return None if values is None else json.dumps(list(values))

    def _array_param(self, values: Sequence[Any]) -> Any:
        """A list bound as one array, in its own order (element i pairs with element i of
        another array)."""
        return json.dumps(list(values))

    def _money_param(self, value: Decimal | None) -> Any:
        return None if value is None else str(value)

    # --- the transition primitive --------------------------------------------------------

    def _event_row(self, job_id: int, seq: int, at: float, kind: str, src: str | None,
                   dst: str | None, attempt: int | None, data: dict[str, Any] | None) -> Row:
        return {"job_id": job_id, "seq": seq, "at": at, "kind": kind,
                "from_state": src, "to_state": dst, "attempt": attempt,
                "data": self._json_param(data or {})}

    def _transition(self, tx: Tx, row: Row, to: JobState, *, now: float,
                    kind: str | None = None, data: dict[str, Any] | None = None,
                    **changes: Any) -> Row:
        """Move a locked job row to ``to`` and append its event; returns the new row values."""
        src = JobState(row["state"])
        check_transition(src, to, row["id"])
        new = self._mutable(row)
        new.update(changes)
        new["state"] = str(to)
        if to not in LEASED_STATES:
            new.update(lease_owner=None, lease_expires_at=None, lease_attempt=None)
        new["finished_at"] = now if to in TERMINAL else None
        seq = self._update_row(tx, row["id"], new, now)
        tx.run("insert_event", **self._event_row(row["id"], seq, now, kind or str(to),
                                                 str(src), str(to), row.get("lease_attempt")
                                                 or row.get("attempt_count"), data))
        if to in TERMINAL and row.get("parent_id") is not None:
            self._child_finished(tx, int(row["id"]), str(to), now)
        if to == JobState.CANCELLED and row.get("attempt_count"):  # it ran: it may hold some
            self._job_cancelled(tx, row, now)
        return new

    def _job_cancelled(self, tx: Tx, job: Row, now: float) -> None:  # noqa: B027 - hook
        """A job was just cancelled (this transaction): what it held reserved and will never
        use goes back (``batches.py``). Here: nothing."""

    def _child_finished(self, tx: Tx, child_id: int, state: str,  # noqa: B027 - hook
                        now: float) -> None:
        """A child just ended in ``state`` (this transaction): a parent gathering it may
        wake (``waits.py``). Here: nothing."""

    def _mutable(self, row: Row) -> Row:
        """A locked row's mutable columns, times as unix seconds and JSON as parameters."""
        new = {k: row.get(k) for k in _MUTABLE}
        for k in ("run_after", "lease_expires_at", "finished_at"):
            new[k] = as_seconds(new[k])
        if isinstance(new["budget"], (dict, list)):
            new["budget"] = self._json_param(new["budget"])
        if new["result"] is not None and not isinstance(new["result"], (str, bytes)):
            new["result"] = self._json_param(new["result"])
        return new

    def _update_row(self, tx: Tx, job_id: int, new: Row, now: float) -> int:
        """Write ``new`` over the job's mutable columns; returns the job's next event seq."""
        return present(tx.one("update_job", **new, id=job_id, now=now))["event_seq"]

    def _locked(self, tx: Tx, job_id: int, projects: Iterable[str] | None = None) -> Row:
        row = tx.one("lock_job", id=job_id)
        if row is None or (projects is not None and row["project"] not in set(projects)):
            raise JobNotFound(f"job {job_id} not found", job_id=job_id)
        return row

    def _held(self, tx: Tx, job_id: int, attempt: int) -> Row:
        row = tx.one("lock_job", id=job_id)
        if row is None or row["lease_attempt"] != attempt:
            raise LeaseLost(f"job {job_id}: lease {attempt} is no longer held", job_id=job_id)
        return row

    # --- events --------------------------------------------------------------------------

    def append_event(self, job_id: int, kind: str, data: dict[str, Any], *,
                     attempt: int | None = None) -> int:
        with self._write() as tx:
            now = self._now(tx, None)
            if attempt is not None:
                self._held(tx, job_id, attempt)
            row = tx.one("bump_event_seq", id=job_id)
            if row is None:
                raise JobNotFound(f"job {job_id} not found", job_id=job_id)
            tx.run("insert_event", **self._event_row(job_id, row["event_seq"], now, kind,
                                                     None, None, attempt, data))
            return int(row["event_seq"])

    def _note(self, tx: Tx, job_id: int, kind: str, now: float, attempt: int | None,
              data: dict[str, Any]) -> None:
        seq = present(tx.one("bump_event_seq", id=job_id))["event_seq"]
        tx.run("insert_event", **self._event_row(job_id, seq, now, kind, None, None, attempt,
                                                 data))
