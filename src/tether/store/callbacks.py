"""Callback URLs in the store: made for an open signal wait, used once to answer it.

A callback row holds the SHA-256 of its token (``core/callbacks.py``), never the token. Using
one is a signal (``send_signal``'s mailbox and wake-up) plus the row marked used, in one
transaction under the job's row lock: two requests with the same token, or with two tokens of
the same wait, deliver at most one signal between them, on either backend.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from ..clock import LAST_TS
from ..core import callbacks as cb
from ..core.callbacks import Callback
from ..core.states import TERMINAL, JobState
from ..errors import CallbackUsed, JobStateError
from ..records import Job
from .rows import as_datetime, as_seconds, to_job
from .tx import Row, Tx, present
from .waits import Waits


class Callbacks(Waits):
    """``issue_callback``, ``callback_handed``, ``callbacks``, ``check_callback`` and
    ``answer_callback``."""

    def issue_callback(self, job_id: int, *, id: str, token_hash: str, expires_in: float,
                       issued_by: str, key: str | None = None, attempt: int | None = None,
                       projects: Iterable[str] | None = None,
                       now: float | None = None) -> Callback | None:
        """Record a callback for the job's open signal wait ``key`` (default: the wait the
        job is blocked on), expiring ``expires_in`` seconds from now. ``attempt``: made by the
        job itself under its lease; then nothing is made (None) when the job already handed
        one out for this wait, so a replay sends no second notification. A job that is not
        waiting for a signal takes none (``JobStateError``)."""
        with self._write() as tx:
            now = self._now(tx, now)
            job = (self._held(tx, job_id, attempt) if attempt is not None
                   else self._locked(tx, job_id, projects))
            wait = (tx.one("wait_get", job_id=job_id, key=key) if key is not None
                    else tx.one("wait_current", job_id=job_id))
            if (JobState(job["state"]) in TERMINAL or wait is None or wait["kind"] != "signal"
                    or wait["status"] != "open"):
                raise JobStateError(f"job {job_id} is not waiting for a signal; a callback "
                                    "answers an open signal wait", job_id=job_id,
                                    state=job["state"])
            if attempt is not None and tx.one("callback_handed_exists", job_id=job_id,
                                            key=wait["key"]) is not None:
                return None
            expires_at = min(now + expires_in, LAST_TS)
            tx.run("callback_insert", id=id, job_id=job_id, key=wait["key"],
                   signal=wait["signal"], token_hash=token_hash, issued_by=issued_by, now=now,
                   expires_at=expires_at)
            self._note(tx, job_id, "callback", now, attempt,
                       {"id": id, "key": wait["key"], "signal": wait["signal"],
                        "issued_by": issued_by, "expires_at": expires_at})
            return _callback(present(tx.one("callback_get", id=id)), now)

    def callback_handed(self, job_id: int, id: str, *, now: float | None = None) -> None:
        """The job's notify hook returned with callback ``id``: a replay makes no other."""
        with self._write() as tx:
            tx.run("callback_handed", id=id, job_id=job_id, now=self._now(tx, now))

    def callbacks(self, job_id: int, *, key: str | None = None,
                  projects: Iterable[str] | None = None,
                  now: float | None = None) -> list[Callback]:
        """The job's callbacks (of wait ``key`` only, if given), oldest first, with their
        state as of ``now``; never their tokens."""
        with self._read() as tx:
            self._visible(tx, job_id, projects)
            now = self._now(tx, now)
            rows = (tx.all("callbacks_of", job_id=job_id) if key is None
                    else tx.all("callbacks_of_wait", job_id=job_id, key=key))
            return [_callback(r, now) for r in rows]

    def check_callback(self, job_id: int, signal: str, raw: str, *,
                       now: float | None = None) -> Callback:
        """The callback ``raw`` names if it would answer ``job_id``'s ``signal`` now; its
        refusal (a ``CallbackRefused``) raised otherwise. Reads only: a page that asks a
        person to confirm spends nothing."""
        with self._read() as tx:
            now = self._now(tx, now)
            row = self._honoured(tx, job_id, signal, raw, now, tx.one("get_job", id=job_id))
            return _callback(row, now)

    def answer_callback(self, job_id: int, signal: str, raw: str, value: Any = None, *,
                        now: float | None = None) -> Job:
        """Deliver ``value`` as the signal ``signal`` to ``job_id`` with the callback token
        ``raw``, exactly as ``send_signal`` would, and spend the token. Refused (a
        ``CallbackRefused``, nothing written) for a malformed or unknown token, another job's
        or signal's, one used or expired, or one whose wait is over."""
        with self._write() as tx:
            now = self._now(tx, now)
            self._honoured(tx, job_id, signal, raw, now, None)
            job = self._locked(tx, job_id)
            row = self._honoured(tx, job_id, signal, raw, now, job)  # again, under the lock
            if tx.run("callback_use", id=row["id"], now=now) != 1:
                raise CallbackUsed(f"callback {row['id']} was used meanwhile", job_id=job_id)
            return self._signal_by_callback(tx, job, signal, value, now, row["id"])

    def _honoured(self, tx: Tx, job_id: int, signal: str, raw: str, now: float,
                  job: Row | None) -> Row:
        """The callback row ``raw`` names, checked (``core.callbacks.refusal``): the token
        alone without ``job``; with it, also that its wait is open and unanswered."""
        cb_id = cb.token_id(raw)
        row = None if cb_id is None else tx.one("callback_get", id=cb_id)
        answered, wait_open = False, True
        if job is not None and row is not None:
            wait = tx.one("wait_get", job_id=job_id, key=row["wait_key"])
            answered = tx.one("callback_answered", job_id=job_id, key=row["wait_key"]) is not None
            wait_open = (wait is not None and wait["status"] == "open"
                     and JobState(job["state"]) not in TERMINAL)
        refused = cb.refusal(_secs(row), raw=raw, job_id=job_id, signal=signal, now=now,
                             answered=answered, wait_open=wait_open)
        if refused is not None:
            raise refused
        return present(row)

    def _signal_by_callback(self, tx: Tx, job: Row, name: str, value: Any, now: float,
                           cb_id: str) -> Job:
        tx.run("signal_insert", job_id=job["id"], name=name, value=self._json_param(value),
               now=now)
        self._note(tx, job["id"], "signal", now, None, {"name": name, "callback": cb_id})
        if job["state"] == JobState.WAITING:
            self._wake_if_ready(tx, job, now)
        return to_job(present(tx.one("get_job", id=job["id"])))


def _secs(row: Row | None) -> Row | None:
    if row is None:
        return None
    return dict(row, expires_at=as_seconds(row["expires_at"]),
                used_at=as_seconds(row.get("used_at")))


def _callback(row: Row, now: float) -> Callback:
    expires = as_seconds(row["expires_at"])
    return Callback(id=row["id"], job_id=int(row["job_id"]), key=row["wait_key"],
                       signal=row["signal"], issued_by=row["issued_by"],
                       created_at=as_datetime(row["created_at"]),
                       expires_at=as_datetime(row["expires_at"]),
                       used_at=as_datetime(row.get("used_at")),
                       state=cb.state(row.get("used_at"), expires, now))
