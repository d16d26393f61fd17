"""The MCP tools: the same facade calls and project scoping as the REST API.

Each tool takes the caller's ``Principal`` (from the stdio token, or the HTTP request's bearer
token) and answers JSON shaped like the REST API's (``JobOut``, ``EventOut``). A failure is an
MCP tool error whose text starts with the stable code, e.g. ``job_not_found: job 7 not found``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from ..app import DEFAULT_PROJECT, Tether
from ..core.budget import LIMIT_FIELDS
from ..core.states import JobState
from ..errors import TetherError
from ..wire import idempotency, pagination
from ..wire.principal import Principal
from ..wire.problems import Problem
from ..wire.models import EventOut, JobOut

MAX_LIST = 200
MAX_EVENTS = 1000


def job_json(job: Any) -> dict[str, Any]:
    return JobOut.of(job).model_dump(mode="json")


def _fail(code: str, message: str) -> ToolError:
    return ToolError(f"{code}: {message}")


def translate(exc: Exception) -> ToolError:
    """A ``ToolError`` carrying the stable code of a tether error or API problem."""
    if isinstance(exc, TetherError):
        return _fail(exc.code, exc.message)
    if isinstance(exc, Problem):
        return _fail(exc.code, exc.detail)
    return _fail("internal_error", str(exc))


class Tools:
    """Tool bodies, independent of the transport. ``who`` decides what the caller may see."""

    def __init__(self, app: Tether) -> None:
        self.app = app

    def submit_job(self, who: Principal, type: str, payload: Any = None,
                   project: str | None = None, idempotency_key: str | None = None,
                   queue: str | None = None, priority: int | None = None,
                   max_attempts: int | None = None, run_after: str | None = None,
                   budget: dict[str, Any] | None = None) -> dict[str, Any]:
        project = project or who.default_project(DEFAULT_PROJECT)
        if project is None:
            raise _fail("validation_error", "project: this token has several projects; name one")
        if not who.allows(project):
            raise _fail("forbidden", f"this token may not submit to project {project!r}")
        if budget is not None:
            unknown = set(budget) - set(LIMIT_FIELDS)
            if unknown:
                raise _fail("validation_error", f"budget: unknown limit(s) {sorted(unknown)}; "
                            f"use {', '.join(LIMIT_FIELDS)}")
        options: dict[str, Any] = {"type": type, "payload": payload, "project": project,
                                   "queue": queue, "priority": priority,
                                   "max_attempts": max_attempts, "budget": budget}
        if run_after is not None:
            try:
                options["run_after"] = datetime.fromisoformat(run_after)
            except ValueError:
                raise _fail("validation_error", "run_after: not an ISO 8601 time") from None
        job, created = idempotency.submit(self.app, options, idempotency_key)
        return {"created": created, "job": job_json(job)}

    def get_job(self, who: Principal, job_id: int) -> dict[str, Any]:
        return job_json(self.app.get(job_id, projects=who.scope))

    def list_jobs(self, who: Principal, project: str | None = None, state: str | None = None,
                  type: str | None = None, queue: str | None = None, limit: int = 20,
                  cursor: str | None = None) -> dict[str, Any]:
        if state is not None:
            try:
                state = str(JobState(state))
            except ValueError:
                raise _fail("validation_error", f"state: one of "
                            f"{', '.join(s.value for s in JobState)}") from None
        if project is not None and not who.allows(project):
            raise _fail("forbidden", f"this token may not read project {project!r}")
        limit = max(1, min(int(limit), MAX_LIST))
        page = self.app.list(project=project, projects=who.scope, state=state, type=type,
                             queue=queue, before_id=pagination.decode(cursor), limit=limit + 1)
        more = len(page) > limit
        page = page[:limit]
        return {"items": [job_json(j) for j in page],
                "next_cursor": pagination.encode(page[-1].id) if more else None}

    def get_events(self, who: Principal, job_id: int, after: int = 0,
                   limit: int = 200) -> dict[str, Any]:
        self.app.get(job_id, projects=who.scope)
        limit = max(1, min(int(limit), MAX_EVENTS))
        events = self.app.events(job_id, after=max(0, int(after)), limit=limit + 1,
                                 projects=who.scope)
        more = len(events) > limit
        events = events[:limit]
        return {"items": [EventOut.of(e).model_dump(mode="json") for e in events],
                "next_after": events[-1].seq if events else after, "has_more": more}

    def control(self, who: Principal, action: str, job_id: int,
                reason: str | None = None) -> dict[str, Any]:
        if action == "cancel":
            return job_json(self.app.cancel(job_id, reason=reason, projects=who.scope))
        return job_json(getattr(self.app, action)(job_id, projects=who.scope))
