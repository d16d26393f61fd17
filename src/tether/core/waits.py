"""Waits: what a waiting job waits for, and when the wait is over (pure; every backend agrees).

A job waits for its children (``gather``), a timer (``sleep``) or a signal
(``wait_for_signal``). The store records each wait as a row keyed within the job; ``decide``
says, from durable rows alone and the store's clock, whether the wait is satisfied and what
value the job's replay receives. Nothing here trusts a notification: the same decision is made
when a child finishes, when a signal arrives, and by the periodic sweep, so a crash between any
two of them loses no wake-up.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping, Sequence

from ..errors import InvalidArgument

KINDS = ("children", "timer", "signal", "provider_batch")
FAIL_MODES = ("fast", "collect")
FAILED_CHILD_STATES = frozenset({"failed", "cancelled"})

RECHECK_S = 300.0
"""A wait without a deadline is re-decided by the sweep this often: a backstop only (children
and signals wake their waiter in their own transaction), so a slow period costs nothing."""
PARKED_RECHECK_S = 2.0
"""A gather is re-decided once this soon after its job parks on it. A child whose finishing
transaction read the gathers waiting for it before the gather was committed, and committed
after the park counted the children, is counted by neither: each read the other's rows as they
were before (PostgreSQL's read committed; SQLite's one writer cannot interleave them). Only a
count after that child committed finds it; such a transaction is one batch of finishes long,
so this recount bounds the parent's wake delay, which the backstop alone left at
``RECHECK_S``."""


@dataclass(frozen=True)
class WaitSpec:
    """One wait as job code asks for it. ``delay_s`` is resolved against the store's clock
    when the wait is first recorded; a replay finds the recorded deadline, never a new one."""

    key: str
    kind: str
    delay_s: float | None = None
    wake_at: float | None = None
    children: tuple[int, ...] = ()
    fail_mode: str = "fast"
    signal: str | None = None
    prompt: str | None = None
    schema: Any = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgument(f"unknown wait kind {self.kind!r}")
        if self.fail_mode not in FAIL_MODES:
            raise InvalidArgument(f"fail must be one of {', '.join(FAIL_MODES)}, "
                                  f"got {self.fail_mode!r}")
        if self.kind == "timer" and self.delay_s is None and self.wake_at is None:
            raise InvalidArgument("a timer needs a delay or a time to wake at")
        if self.kind == "signal" and not self.signal:
            raise InvalidArgument("a signal wait needs the signal's name")


@dataclass(frozen=True)
class Wake:
    """A satisfied wait: how it ended and the value the job's replay receives.
    ``signal_id``: the mailbox entry this wake consumes (exactly once)."""

    outcome: str
    value: Any = None
    signal_id: int | None = None


@dataclass(frozen=True)
class ChildFailure:
    """A child that did not succeed, in ``gather(..., fail="collect")``'s results."""

    job_id: int
    state: str
    error_code: str | None = None
    error_summary: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As a job's result stores it (a gathered list may be returned as it is)."""
        return {"job_id": self.job_id, "state": self.state, "error_code": self.error_code,
                "error_summary": self.error_summary}


@dataclass
class WaitCounters:
    """How many sleeps and signal waits (per name) this attempt reached: their keys."""

    sleeps: int = 0
    signals: dict[str, int] | None = None

    def next_sleep(self) -> str:
        self.sleeps += 1
        return f"sleep:{self.sleeps}"

    def next_signal(self, name: str) -> str:
        if self.signals is None:
            self.signals = {}
        n = self.signals[name] = self.signals.get(name, 0) + 1
        return f"signal:{name}:{n}"


def gather_key(ids: Sequence[int]) -> str:
    """A gather's key: the same children always name the same wait, in any attempt."""
    digest = hashlib.sha256(",".join(str(i) for i in ids).encode()).hexdigest()[:16]
    return f"gather:{len(ids)}:{digest}"


def child_outcome(row: Mapping[str, Any]) -> dict[str, Any]:
    """A finished (or, under fail-fast, still running) child as a gather records it; a
    ``pruned`` row (the child no longer exists) as cancelled with ``error_code`` pruned."""
    if row.get("pruned"):
        return {"job_id": int(row["id"]), "state": "cancelled", "error_code": "pruned",
                "error_summary": "child job no longer exists"}
    result = row.get("result")
    if isinstance(result, (str, bytes)):
        result = json.loads(result)
    out: dict[str, Any] = {"job_id": int(row["id"]), "state": str(row["state"])}
    if row["state"] == "succeeded":
        out["result"] = result
    elif row["state"] in FAILED_CHILD_STATES:
        out.update(error_code=row.get("error_code"), error_summary=row.get("error_summary"))
    return out


def decide(wait: Mapping[str, Any], *, now: float, pending: int | None = None,
           failed: int = 0, failure: Mapping[str, Any] | None = None,
           signal: Mapping[str, Any] | None = None,
           batch: Mapping[str, Any] | None = None) -> Wake | None:
    """Is ``wait`` (a ``job_waits`` row) satisfied at ``now``? For a gather: ``pending``,
    how many of its children have not finished, ``failed``, how many failed, were cancelled
    or no longer exist, and ``failure``, the first of those in the gather's order (id,
    state, error_code, error_summary). ``signal``: the oldest unconsumed mailbox entry of its
    signal (id, value). ``batch``: its provider batch's row (status). None: keep waiting.

    A gather's value holds no results: they are read from the children's rows when the
    parent replays (``gather_iter``), page by page. Only a fail-fast wake records the child
    that failed, which the replay raises."""
    kind = wait["kind"]
    if kind == "provider_batch":
        status = None if batch is None else batch.get("status")
        return Wake(str(status)) if status in ("settled", "unconfirmed") else None
    wake_at = wait.get("wake_at")
    if kind == "timer":
        return Wake("fired") if wake_at is not None and now >= wake_at else None
    if kind == "signal":
        if signal is not None:
            value = signal.get("value")
            if isinstance(value, (str, bytes)):
                value = json.loads(value)
            return Wake("received", value, signal_id=int(signal["id"]))
        if wake_at is not None and now >= wake_at:
            return Wake("timeout")
        return None
    if wait.get("fail_mode") == "fast" and failed > 0 and failure is not None:
        return Wake("child_failed", {"failed": child_outcome(failure)})
    if pending is not None and pending <= 0:
        return Wake("children_failed" if failed else "children_done")
    return None


def recheck_at(wait: Mapping[str, Any], now: float, *, parked: bool = False) -> float:
    """When the sweep next looks at a job waiting on ``wait``: its deadline, else a backstop.
    ``parked``: the job parks on it now; a gather is then looked at again after
    ``PARKED_RECHECK_S`` (at its deadline if sooner)."""
    wake_at = wait.get("wake_at")
    later = float(wake_at) if wake_at is not None else now + RECHECK_S
    if parked and wait.get("kind") == "children":
        return min(later, now + PARKED_RECHECK_S)
    return later
