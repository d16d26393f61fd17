"""Budget thresholds in the store: crossings found where use settles, recorded once each.

Every write that settles use (a call's settlement in a book, an orphan spent in full, a
provider batch settled) knows each accumulator before and after, under the row's lock, and
asks ``core/thresholds.py: crossed`` which thresholds that change crossed. Each crossing is
one ``insert_crossing`` in the same transaction: the primary key of ``budget_crossings``
(budget, limit, limit value, threshold, period) lets exactly one transaction write it, however
many workers settle at once and whatever a crash repeats, and only the writer that inserted
the row appends the ``budget_threshold`` event (to the job whose call crossed it) and counts
it for ``/metrics``. A changed limit is a new budget: its thresholds fire again, once each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping, Sequence

from ..core.budget import Budget
from ..core.periods import Window
from ..core.thresholds import Crossing, crossed, watched
from ..records import BudgetCrossing
from .profiles import Profiles
from .rows import as_datetime, as_seconds
from .totals import count_engine
from .tx import Row, Tx

THRESHOLD_EVENT = "budget_threshold"
CROSSINGS = "budget_thresholds"
"""The engine counter of crossings recorded (``tether_budget_thresholds_total``)."""


@dataclass(frozen=True)
class Watch:
    """One accumulator whose thresholds are watched: whose budget, and in which period."""

    scope: str
    key: str
    project: str
    limits: Budget
    window: Window | None = None

    def found(self, before: Mapping[str, Any], after: Mapping[str, Any],
              job_id: int, attempt: int | None) -> list[Found]:
        return [Found(self, c, job_id, attempt) for c in crossed(self.limits, before, after)]


@dataclass(frozen=True)
class Found:
    """A crossing not yet recorded: which watch, and which job's write made it."""

    watch: Watch
    crossing: Crossing
    job_id: int
    attempt: int | None


def watches(project: str, keyed: Sequence[tuple[str, str, Budget]],
            w: Window | None) -> list[Watch | None]:
    """The watch of each accumulator of a call (``(scope, key, limits)`` in the order the
    call's rows come, a periodic project's period row last), ``None`` where there is
    nothing to watch. A periodic project budget's thresholds count per period: its
    all-time row is not watched, its period row is."""
    out: list[Watch | None] = []
    for scope, key, limits in keyed:
        if not watched(limits):
            out.append(None)
        elif scope == "job":
            out.append(Watch("job", key, project, limits))
        elif scope == "project":
            out.append(Watch("project", key, project, limits) if w is None else None)
        else:
            out.append(Watch("project", project, project, limits, w))
    return out


class Thresholds(Profiles):
    """Recording crossings (``_record_crossings``) and reading them back."""

    def _record_crossings(self, tx: Tx, found: Sequence[Found], now: float) -> int:
        """Insert each crossing; append the event and count it only where the insert wrote a
        row (a crossing another transaction recorded first is not repeated)."""
        recorded = 0
        for f in found:
            w, c = f.watch, f.crossing
            start = w.window.start if w.window is not None else None
            row = tx.one("insert_crossing", scope=w.scope, key=w.key,
                         limit_name=c.limit_name, threshold=repr(c.threshold),
                         limit_value=str(c.limit), period=w.window.label if w.window else "",
                         project=w.project, metric=c.metric, used=str(c.used),
                         period_start=start, job_id=f.job_id, now=now)
            if row is None:
                continue
            recorded += 1
            self._note(tx, f.job_id, THRESHOLD_EVENT, now, f.attempt,
                       c.event(w.scope, w.project, w.key, start))
        count_engine(tx, CROSSINGS, recorded)
        return recorded

    def budget_crossings(self, project: str, *, scope: str | None = None,
                         key: str | None = None, limit: int = 100) -> list[BudgetCrossing]:
        """The thresholds crossed in ``project``, newest first: its own budget's (``scope``
        project) and its jobs' (``scope`` job, ``key`` the job id)."""
        with self._read() as tx:
            rows = tx.all("budget_crossings", project=project, scope=scope, key=key,
                          limit=limit)
        return [to_crossing(r) for r in rows]


def to_crossing(r: Row) -> BudgetCrossing:
    start = r.get("period_start")
    return BudgetCrossing(
        scope=r["scope"], budget=r["key"], project=r["project"], metric=r["metric"],
        limit_name=r["limit_name"], threshold=float(r["threshold"]), limit=r["limit_value"],
        used=r["used"], period=r["period"] or None,
        period_start=None if start is None else as_seconds(start), job_id=int(r["job_id"]),
        crossed_at=as_datetime(r["crossed_at"]))
