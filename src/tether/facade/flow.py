"""``Tether``'s flow control: job types paused on their own, and concurrency limits.

A part of the facade: the CLI's ``tether type`` and ``tether limit``, the REST ``/types`` and
``/limits`` routes, the MCP type and limit tools, the dashboard's queues page and ``/metrics``
all read and change them through these methods. The rules (what holds a slot, the key, the
claim that enforces them) are in docs/flow-control.md.
"""

from __future__ import annotations

import builtins
import re

from ..core.validate import MAX_INT
from ..errors import InvalidArgument, UnknownJobType
from ..fleet import FlowLimit, FlowUsage, TypeInfo
from ..store.flow import FLOW_SCOPES
from ..submission import checked_name
from .host import FacadeHost

KEY_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
"""A payload field a limit may be keyed by: a plain top-level name, the same path in both
backends' JSON functions."""


class FlowPart(FacadeHost):
    """Pausing job types; setting, clearing and reading concurrency limits (a part of
    ``Tether``)."""

    def job_types(self) -> builtins.list[TypeInfo]:
        """Every job type registered here, that has jobs, or that was ever paused, with its
        jobs counted by state (exact: reads every job)."""
        known = {t.name: t for t in self.store.list_types()}
        for name in self.registry.names():
            known.setdefault(name, TypeInfo(name, False, {}))
        return [known[name] for name in sorted(known)]

    def paused_types(self) -> dict[str, bool]:
        """Each job type registered here or ever paused: whether it is paused now. Reads no
        job, so ``/metrics`` asks it on every scrape."""
        flags = dict.fromkeys(self.registry.names(), False) | {
            t.name: t.paused for t in self.store.list_types(counts=False)}
        return {name: flags[name] for name in sorted(flags)}

    def pause_type(self, name: str) -> TypeInfo:
        """Workers claim no job of this type until it is resumed; its running jobs finish.
        Stored: every worker sees it at its next claim."""
        return self.store.set_type_paused(self._known_type(name), True)

    def resume_type(self, name: str) -> TypeInfo:
        return self.store.set_type_paused(self._known_type(name), False)

    def flow_limits(self) -> builtins.list[FlowLimit]:
        return self.store.list_flow_limits()

    def set_flow_limit(self, scope: str, name: str, *, per_key: int | None = None,
                       total: int | None = None, key: str | None = None) -> FlowLimit:
        """At most ``per_key`` jobs of the queue or type (``scope``) hold a slot per key, and
        at most ``total`` in all; replaces the limit it had. The key is the job's project, or
        its payload's ``key`` field. Every worker's next claim obeys it; jobs already running
        above a lowered limit finish."""
        if scope not in FLOW_SCOPES:
            raise InvalidArgument(f"scope must be one of {', '.join(FLOW_SCOPES)}, got "
                                  f"{scope!r}", argument="scope")
        checked_name(name, scope)
        for what, n in (("per_key", per_key), ("total", total)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, int)
                                  or not 1 <= n <= MAX_INT):
                raise InvalidArgument(f"{what} must be a whole number from 1 to {MAX_INT}, got "
                                      f"{n!r}", argument=what)
        if per_key is None and total is None:
            raise InvalidArgument("a limit needs per_key, total or both; clear_flow_limit "
                                  "removes one", argument="per_key")
        if key is not None and (not isinstance(key, str) or not KEY_FIELD.fullmatch(key)):
            raise InvalidArgument(f"key must be a top-level payload field name (letters, "
                                  f"digits, _), got {key!r}", argument="key")
        return self.store.put_flow_limit(FlowLimit(scope, name, key, per_key, total))

    def clear_flow_limit(self, scope: str, name: str) -> bool:
        """Remove the queue's or type's limit. False: it had none."""
        if scope not in FLOW_SCOPES:
            raise InvalidArgument(f"scope must be one of {', '.join(FLOW_SCOPES)}, got "
                                  f"{scope!r}", argument="scope")
        return self.store.delete_flow_limit(scope, checked_name(name, scope))

    def flow_usage(self) -> builtins.list[FlowUsage]:
        """Running / limit: for every limit its total row (``key`` None) then one row per key
        holding a slot now (leased, running, pausing or cancelling; waiting jobs hold none)."""
        return self.store.flow_usage()

    def _known_type(self, name: str) -> str:
        """A type registered here or that has jobs; pausing any other name would store a
        typo."""
        if checked_name(name, "job type") in self.registry or name in {
                t.name for t in self.store.list_types()}:
            return name
        raise UnknownJobType(f"job type {name!r} is not registered here and has no jobs",
                             type=name)
