"""Schedules on the facade: define, list, pause, resume and delete them, and run one
scheduler step. Every interface (CLI, REST, dashboard) calls these.

A schedule is resolved once, when it is defined: the job type's defaults (queue, priority,
attempts, budget), the payload's canonical form, the configuration hash and the price
profile are stored with it, so every worker enqueues the identical job for a tick whichever
of them gets there first. Defining it again (``app.schedule`` with the same name, e.g. at
every deploy) refreshes all of that.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Mapping

from ..core.budget import Budget
from ..core.schedule import Cron, check_catch_up, check_name
from ..errors import ScheduleNotFound
from ..records import Job, Schedule
from ..store.base import NewSchedule
from ..submission import DEFAULT_PROJECT, checked_name
from .host import FacadeHost


class SchedulesPart(FacadeHost):
    """The schedule methods of ``Tether``."""

    def schedule(self, name: str, *, cron: str, type: str, timezone: str = "UTC",
                 payload: Any = None, budget: Budget | Mapping[str, Any] | None = None,
                 project: str = DEFAULT_PROJECT, queue: str | None = None,
                 catch_up: str = "latest", projects: Iterable[str] | None = None) -> Schedule:
        """Store a schedule: every tick of ``cron`` (five fields, or ``@daily`` ...) in
        ``timezone`` (IANA, default UTC) enqueues exactly one ``type`` job with ``payload``,
        whatever the number of workers. ``catch_up`` says what a step does with ticks missed
        while no scheduler ran: ``"latest"`` enqueues the most recent, ``"all"`` every one,
        ``"none"`` none. Redefining a schedule keeps its next run unless the cron or zone
        changed. With ``projects`` (an API token's scope) a name held by another project is
        refused (``invalid_argument``)."""
        return self.schedule_with_status(
            name, cron=cron, type=type, timezone=timezone, payload=payload, budget=budget,
            project=project, queue=queue, catch_up=catch_up, projects=projects)[0]

    def schedule_with_status(self, name: str, *, cron: str, type: str, timezone: str = "UTC",
                             payload: Any = None,
                             budget: Budget | Mapping[str, Any] | None = None,
                             project: str = DEFAULT_PROJECT, queue: str | None = None,
                             catch_up: str = "latest",
                             projects: Iterable[str] | None = None) -> tuple[Schedule, bool]:
        """Like ``schedule``; also says whether the schedule was created (False: redefined)."""
        check_name(name)
        Cron.parse(cron, timezone)
        check_catch_up(catch_up)
        checked_name(project, "project")
        job = self._resolve(type, payload, project=project, queue=queue, budget=budget,
                            flow_control=False)
        spec = NewSchedule(name=name, cron=cron, timezone=timezone, catch_up=catch_up, job=job)
        return self.store.put_schedule(spec, projects=projects, profile=self.price_profile)

    def schedules(self, *, project: str | None = None,
                  projects: Iterable[str] | None = None) -> list[Schedule]:
        """Every schedule (of ``project``; within ``projects``), by name."""
        scope = None if projects is None else set(projects)
        if project is not None:
            checked_name(project, "project")
            scope = {project} if scope is None else scope & {project}
        return self.store.list_schedules(projects=scope)

    def get_schedule(self, name: str, *,
                     projects: Iterable[str] | None = None) -> Schedule:
        found = self.store.get_schedule(check_name(name), projects=projects)
        if found is None:
            raise ScheduleNotFound(f"schedule {name!r} not found", schedule=name)
        return found

    def pause_schedule(self, name: str, *,
                       projects: Iterable[str] | None = None) -> Schedule:
        """No tick is enqueued while paused; ticks that fall in the pause are never run."""
        return self.store.set_schedule_paused(check_name(name), True, projects=projects)

    def resume_schedule(self, name: str, *,
                        projects: Iterable[str] | None = None) -> Schedule:
        """Due again from the first tick after now."""
        return self.store.set_schedule_paused(check_name(name), False, projects=projects)

    def delete_schedule(self, name: str, *,
                        projects: Iterable[str] | None = None) -> Schedule:
        """Delete the schedule; the jobs it already enqueued stay. Returns it as it was."""
        return self.store.delete_schedule(check_name(name), projects=projects)

    def run_schedules(self, *, now: float | None = None) -> list[Job]:
        """One scheduler step (every worker runs it periodically): the jobs it enqueued."""
        return self.store.run_schedules(now=now)
