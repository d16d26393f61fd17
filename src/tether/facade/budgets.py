"""``Tether``'s budgets: a job's limits and a project's shared limits, changed at run time.

A part of the facade: the CLI (``tether job budget``, ``tether project budget``), the REST
budget routes, the MCP budget tools and the dashboard change limits through these methods, so
raising a limit resumes the jobs it stopped the same way everywhere.
"""

from __future__ import annotations

import builtins
from typing import Any
from collections.abc import Iterable, Mapping

from ..core import validate
from ..core.budget import Budget, BudgetStatus
from ..core.states import JobState
from ..errors import InvalidArgument, JobStateError
from ..records import BudgetCrossing, Job
from ..submission import as_budget, checked_name, job_limits
from .host import FacadeHost


class BudgetsPart(FacadeHost):
    """Job and project limits (a part of ``Tether``)."""

    def set_budget(self, job_id: int, budget: Budget | Mapping[str, Any] | None = None, *,
                   projects: Iterable[str] | None = None, resume: bool = True,
                   **limits: Any) -> Job:
        """Raise (or lower) a job's limits; limits not named stay as they were. A job paused
        because its budget ran out is resumed (``resume=False`` leaves it paused)."""
        changes = job_limits(as_budget(budget).merged(limits) if limits else as_budget(budget))
        validate.flag(resume, "resume")
        job = self.store.set_budget(validate.job_id(job_id), changes, projects=projects)
        if resume and job.state == JobState.PAUSED and job.error_code == "budget_exhausted":
            job = self.resume(job.id, projects=projects)
        return job

    def budget_crossings(self, project: str, *, job_id: int | None = None,
                         scope: str | None = None, key: str | None = None,
                         limit: int = 100) -> builtins.list[BudgetCrossing]:
        """The thresholds crossed in ``project``, newest first (``core/thresholds.py``): its
        own budget's (``scope="project"``) and its jobs' (``scope="job"``; ``job_id``: that
        job's budget alone). Each is also the ``budget_threshold`` event of the job whose
        call crossed it."""
        if job_id is not None:
            scope, key = "job", str(validate.job_id(job_id))
        if scope not in (None, "job", "project"):
            raise InvalidArgument(f"scope must be job or project, got {scope!r:.40}",
                                  argument="scope")
        return self.store.budget_crossings(checked_name(project, "project"), scope=scope,
                                           key=key, limit=validate.count(limit, "limit"))

    def project_budget(self, project: str) -> BudgetStatus:
        return self.store.project_budget(checked_name(project, "project"))

    def set_project_budget(self, project: str, budget: Budget | Mapping[str, Any] | None = None,
                           *, resume: bool = True, replace: bool = False,
                           **limits: Any) -> BudgetStatus:
        """Set a project's shared limits: those named (``replace``: exactly these, any other
        unlimited); jobs of the project paused by its budget resume."""
        changes = as_budget(budget).merged(limits) if limits else as_budget(budget)
        status = self.store.set_project_budget(checked_name(project, "project"), changes,
                                               replace=replace)
        if resume:
            for job in self.list(project=project, state="paused", limit=10_000):
                if job.error_code in ("budget_exhausted", "period_budget_exhausted"):
                    try:
                        self.resume(job.id)
                    except JobStateError:
                        pass
        return status
