"""Flow control's stored settings: job types paused on their own, and the concurrency limits
of queues and job types, with the slots each key holds now.

Every claim reads both (``claim_jobs``), so a change here reaches every worker at its next
claim, without a deploy. docs/flow-control.md states the rules and the tests that prove them.
"""

from __future__ import annotations

import math
from collections import Counter

from ..fleet import FlowLimit, FlowUsage, TypeInfo
from .rows import as_seconds
from .transitions import Transitions
from .tx import Row

FLOW_SCOPES = ("queue", "type")
"""What a limit may be declared on."""

PRIORITY_AGING_S = 60.0
"""Aging: a queued job's priority improves by one level for every this many seconds it has
waited since it became runnable (``claim_jobs_fair``; docs/flow-control.md states the bound)."""


def claim_order(rows: list[Row], now: float, fair: bool) -> None:
    """Sort a claimed batch in the order it was chosen, the order a worker runs it in: strict
    (priority, run_after, id), or fair: aged priority, then each project's jobs in turn (the
    place among its own in the batch; the slots a project held before are not in the rows)."""
    def strict(r: Row) -> tuple[float, float, int]:
        return (r["priority"], as_seconds(r["run_after"]), r["id"])
    if not fair:
        rows.sort(key=strict)
        return
    aged = {r["id"]: r["priority"] - math.floor((now - as_seconds(r["run_after"]))
                                                / PRIORITY_AGING_S) for r in rows}
    rows.sort(key=lambda r: (aged[r["id"]], *strict(r)[1:]))
    turn, seen = {}, Counter[str]()
    for r in rows:
        seen[r["project"]] += 1
        turn[r["id"]] = seen[r["project"]]
    rows.sort(key=lambda r: (aged[r["id"]], turn[r["id"]], *strict(r)[1:]))


class Flow(Transitions):
    """Paused job types, concurrency limits and their usage."""

    def set_type_paused(self, name: str, paused: bool) -> TypeInfo:
        with self._write() as tx:
            tx.run("set_type_paused", name=name, paused=paused, now=self._now(tx, None))
        return next(t for t in self.list_types() if t.name == name)

    def list_types(self, *, counts: bool = True) -> list[TypeInfo]:
        """Every job type that has jobs or was ever paused, with its jobs counted by state;
        without ``counts``, only the types ever paused, and no job is read (``/metrics``)."""
        with self._read() as tx:
            rows = tx.all("list_types" if counts else "type_flags")
        types: dict[str, TypeInfo] = {}
        for r in rows:
            t = types.setdefault(r["name"], TypeInfo(r["name"], bool(r["paused"]), {}))
            if r.get("state") is not None:
                t.counts[r["state"]] = int(r["n"])
        return list(types.values())

    def put_flow_limit(self, limit: FlowLimit) -> FlowLimit:
        with self._write() as tx:
            tx.run("put_flow_limit", scope=limit.scope, name=limit.name, key_field=limit.key,
                   per_key=limit.per_key, total=limit.total, now=self._now(tx, None))
        return limit

    def delete_flow_limit(self, scope: str, name: str) -> bool:
        with self._write() as tx:
            return tx.run("delete_flow_limit", scope=scope, name=name) > 0

    def list_flow_limits(self) -> list[FlowLimit]:
        with self._read() as tx:
            rows = tx.all("list_flow_limits")
        return [FlowLimit(r["scope"], r["name"], r["key_field"], r["per_key"], r["total"])
                for r in rows]

    def flow_usage(self) -> list[FlowUsage]:
        """Slots held now under every limit: one row per key holding any (with the per-key
        limit), and one total row per limit (key None, with the total limit), in the order
        of the limits."""
        with self._read() as tx:
            limits = {(r["scope"], r["name"]): r for r in tx.all("list_flow_limits")}
            rows = tx.all("flow_usage")
        out: list[FlowUsage] = []
        for (scope, name), lim in limits.items():
            mine = [r for r in rows if r["scope"] == scope and r["name"] == name]
            out.append(FlowUsage(scope, name, None, sum(int(r["n"]) for r in mine),
                                 lim["total"]))
            out += [FlowUsage(scope, name, str(r["key"]), int(r["n"]), lim["per_key"])
                    for r in mine]
        return out
