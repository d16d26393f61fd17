"""Reads for live event streams: every project's events in order after a cursor, and the last
event seq of many jobs at once.

The feed orders events by ``(at, job_id, seq)`` and names each by a *position*, an opaque
string a reader hands back to resume exactly after it. Resuming is exact only if no event can
commit behind a position already read, so the feed stops at a horizon before which every event
is final:

* SQLite: a write takes the database's single write lock before it reads the clock, so events
  commit in ``at`` order and every committed event is final (no horizon).
* PostgreSQL: an event's ``at`` is its transaction's ``now()`` (its start), so nothing older
  than the oldest transaction still open can commit later; the feed stops there, and never
  more than ``FEED_MAX_LAG_S`` behind the database clock (a transaction open longer than that,
  say a caller's ``submit(conn=...)`` left open, could then slip behind a reader's position).
"""

from __future__ import annotations

import math
from typing import Any
from collections.abc import Iterable, Sequence

from .base import FeedEvent
from .rows import to_event
from .transitions import Transitions
from .tx import Row, Tx, present

FEED_START = "0_0_0"
"""The position before every event."""

FEED_MAX_LAG_S = 30.0


class Feed(Transitions):
    """``feed``, ``feed_head`` and ``event_seqs`` over the backend's named statements."""

    # --- what a backend may change ------------------------------------------------------------

    def _feed_bounds(self, tx: Tx) -> Row:
        """The horizon ``event_feed``/``event_feed_head`` stop at (None: no horizon)."""
        row = present(tx.one("event_horizon", max_lag_s=FEED_MAX_LAG_S))
        return {"horizon_us": row["horizon_us"]}

    def _feed_at(self, text: str) -> Row:
        """The cursor's time, as ``event_feed`` binds it (SQLite: unix seconds, exactly)."""
        return {"at": float(text)}

    # --- reads --------------------------------------------------------------------------------

    def event_seqs(self, ids: Sequence[int]) -> dict[int, int]:
        """The last event seq of each job of ``ids`` that exists: one read for all of them."""
        if not ids:
            return {}
        with self._read() as tx:
            rows = tx.all("event_seqs", ids=self._array_param([int(i) for i in ids]))
        return {int(r["id"]): int(r["event_seq"]) for r in rows}

    def feed(self, *, after: str | None = None, projects: Iterable[str] | None = None,
             limit: int = 500) -> list[FeedEvent]:
        """Up to ``limit`` events of ``projects`` (every project: None) after position ``after``
        (None: from the first event), oldest first, each with its position."""
        at, job_id, seq = parse_position(after or FEED_START)
        with self._read() as tx:
            rows = tx.all("event_feed", **self._feed_at(at), job_id=job_id, seq=seq,
                          projects=self._list_param(projects), limit=int(limit),
                          **self._feed_bounds(tx))
        return [FeedEvent(project=r["project"], event=to_event(r), position=feed_position(r))
                for r in rows]

    def feed_head(self) -> str:
        """The position of the newest final event: a reader starting here gets what comes next."""
        with self._read() as tx:
            row = tx.one("event_feed_head", **self._feed_bounds(tx))
        return FEED_START if row is None else feed_position(row)


def feed_position(row: Row) -> str:
    """The position of an ``event_feed`` or ``event_feed_head`` row."""
    at: Any = row["feed_at"]
    return f"{at!r}_{int(row['job_id'])}_{int(row['seq'])}"


def parse_position(text: str) -> tuple[str, int, int]:
    """``(at, job_id, seq)`` of a position; ``ValueError`` when it is not one."""
    parts = text.split("_")
    if len(parts) != 3:
        raise ValueError(f"not a feed position: {text!r}")
    at, job_id, seq = parts[0], int(parts[1]), int(parts[2])
    if not math.isfinite(float(at)) or job_id < 0 or seq < 0:
        raise ValueError(f"not a feed position: {text!r}")
    return at, job_id, seq
