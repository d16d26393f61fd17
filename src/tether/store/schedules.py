"""Schedules in the store: their rows, and the scheduler step that turns due ticks into jobs.

The step (``run_schedules``) is one transaction: it claims the due schedules (PostgreSQL:
``FOR UPDATE SKIP LOCKED``; SQLite: the write lock of ``BEGIN IMMEDIATE``), enqueues each
tick's job through the same insert as ``submit``, and advances ``next_run_at``. Each tick's job
has the idempotency key ``schedule:<name>:<tick as UTC>`` (``core.schedule.tick_key``), so
even two steps that somehow judged the same tick due meet at the unique (project, key) index
and one job is made. Ticks are judged by the store's clock (``_now``), never a worker's.
Ticks a step skips (``catch_up`` ``latest`` or ``none`` after a gap) are recorded in
``schedule_misses`` in the same transaction, for the webhook outbox (``webhooks.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core.budget import Budget
from ..core.pricing import PriceProfile
from ..core.schedule import MAX_TICKS_PER_STEP, Cron, plan, tick_key
from ..errors import InvalidArgument, ScheduleNotFound, TetherError
from ..records import Job, Schedule
from .base import NewJob, NewSchedule
from .jobs import Jobs
from .rows import as_datetime, as_seconds, load_json
from .tx import Row, Tx, present


def to_schedule(row: Row) -> Schedule:
    paused = bool(row["paused"])
    return Schedule(
        name=row["name"], cron=row["cron"], timezone=row["timezone"], catch_up=row["catch_up"],
        type=row["type"], project=row["project"], queue=row["queue"],
        payload=load_json(row["payload"]), budget=load_json(row["budget"]) or {},
        priority=int(row["priority"]), max_attempts=int(row["max_attempts"]), paused=paused,
        next_run_at=None if paused else as_datetime(row["next_run_at"]),
        last_run_at=as_datetime(row.get("last_run_at")), last_job_id=row.get("last_job_id"),
        created_at=as_datetime(row["created_at"]), updated_at=as_datetime(row["updated_at"]))


def _tick_job(row: Row, tick: float) -> NewJob:
    """The job of one tick, exactly as the schedule resolved it, keyed by the tick."""
    return NewJob(type=row["type"], payload_json=row["payload"], project=row["project"],
                  queue=row["queue"], priority=int(row["priority"]), run_after=None,
                  max_attempts=int(row["max_attempts"]),
                  safe_to_retry=bool(row["safe_to_retry"]),
                  idempotency_key=tick_key(row["name"], tick),
                  input_config_hash=row["input_config_hash"],
                  budget=Budget.from_dict(load_json(row["budget"]) or {}),
                  price_profile=row.get("price_profile"),
                  estimated_cost_usd=row.get("estimated_cost_usd"))


def _missed(cron: Cron, catch_up: str, due: float | None, now: float,
            enqueued: Sequence[float], limit: int) -> list[float]:
    """The due ticks this step enqueues no job for (``latest`` and ``none`` after a gap): the
    schedule misses ``schedule.missed`` webhooks report, at most ``limit`` of them."""
    if catch_up == "all" or due is None or due > now:
        return []
    done = set(enqueued)
    return [t for t in [due, *cron.ticks(due, now, limit=limit)] if t not in done][:limit]


class Schedules(Jobs):
    """Storing, reading, pausing and deleting schedules; the scheduler step."""

    def put_schedule(self, schedule: NewSchedule, *, projects: Iterable[str] | None = None,
                     profile: PriceProfile | None = None,
                     now: float | None = None) -> tuple[Schedule, bool]:
        """Create the schedule, or redefine the one of that name (True: created). A new
        schedule is first due at its first tick after now; a redefinition keeps its
        ``next_run_at`` and paused flag unless the cron or time zone changed (then: the first
        new tick after now). A name held in a project outside ``projects`` is refused."""
        cron = Cron.parse(schedule.cron, schedule.timezone)
        job = schedule.job
        with self._write() as tx:
            now = self._now(tx, now)
            if profile is not None:
                self._save_profile(tx, profile, now)
            tx.run("ensure_queue", name=job.queue, now=now)
            params = {
                "name": schedule.name, "cron": cron.expr, "timezone": schedule.timezone,
                "catch_up": schedule.catch_up, "type": job.type, "project": job.project,
                "queue": job.queue, "priority": job.priority, "max_attempts": job.max_attempts,
                "safe_to_retry": job.safe_to_retry, "payload": job.payload_json,
                "budget": self._json_param(job.budget.to_dict()) or "{}",
                "input_config_hash": job.input_config_hash, "price_profile": job.price_profile,
                "estimated_cost_usd": job.estimated_cost_usd, "next_run_at": cron.next_after(now),
                "now": now}
            old = tx.one("lock_schedule", name=schedule.name)
            # Two first definitions at once: the second insert waits for the first, inserts
            # nothing, and then redefines the row the first committed.
            created = old is None and tx.run("insert_schedule", **params) == 1
            if not created:
                old = present(old or tx.one("lock_schedule", name=schedule.name))
                if projects is not None and old["project"] not in set(projects):
                    raise InvalidArgument(f"schedule name {schedule.name!r} is taken by a "
                                          "project you may not write", argument="name")
                if (old["cron"], old["timezone"]) == (cron.expr, schedule.timezone):
                    params["next_run_at"] = as_seconds(old["next_run_at"])
                tx.run("redefine_schedule", **params)
            row = present(tx.one("lock_schedule", name=schedule.name))
        return to_schedule(row), created

    def get_schedule(self, name: str, *,
                     projects: Iterable[str] | None = None) -> Schedule | None:
        with self._read() as tx:
            row = tx.one("get_schedule", name=name)
        if row is None or (projects is not None and row["project"] not in set(projects)):
            return None
        return to_schedule(row)

    def list_schedules(self, *, projects: Iterable[str] | None = None) -> list[Schedule]:
        with self._read() as tx:
            rows = tx.all("list_schedules", projects=self._list_param(projects))
        return [to_schedule(r) for r in rows]

    def _locked_schedule(self, tx: Tx, name: str, projects: Iterable[str] | None) -> Row:
        row = tx.one("lock_schedule", name=name)
        if row is None or (projects is not None and row["project"] not in set(projects)):
            raise ScheduleNotFound(f"schedule {name!r} not found", schedule=name)
        return row

    def set_schedule_paused(self, name: str, paused: bool, *,
                            projects: Iterable[str] | None = None,
                            now: float | None = None) -> Schedule:
        """Pause (no tick is enqueued while paused) or resume. Resuming a paused schedule
        makes it next due at its first tick after now: ticks that fell in the pause are
        skipped whatever ``catch_up`` says. Pausing a paused schedule, or resuming a running
        one, changes nothing."""
        with self._write() as tx:
            now = self._now(tx, now)
            row = self._locked_schedule(tx, name, projects)
            if bool(row["paused"]) != paused:
                next_run_at = as_seconds(row["next_run_at"])
                if not paused:
                    next_run_at = Cron.parse(row["cron"], row["timezone"]).next_after(now)
                tx.run("set_schedule_paused", name=name, paused=paused,
                       next_run_at=next_run_at, now=now)
                row = present(tx.one("lock_schedule", name=name))
        return to_schedule(row)

    def delete_schedule(self, name: str, *,
                        projects: Iterable[str] | None = None) -> Schedule:
        """Delete the schedule (the jobs it enqueued stay); returns it as it was."""
        with self._write() as tx:
            row = self._locked_schedule(tx, name, projects)
            tx.run("delete_schedule", name=name)
        return to_schedule(row)

    def run_schedules(self, *, now: float | None = None, limit: int = 100,
                      max_ticks: int = MAX_TICKS_PER_STEP) -> list[Job]:
        """One scheduler step: in one transaction, claim up to ``limit`` due schedules,
        enqueue the jobs of their due ticks as ``catch_up`` says (at most ``max_ticks`` per
        schedule) and advance each one's ``next_run_at``. Returns the jobs made (a tick whose
        job already exists makes none). A schedule this process cannot read (a time zone
        unknown here) is left due for another step. A read first: a step with nothing due
        (nearly every step) takes no write lock."""
        made: list[Job] = []
        with self._read() as tx:
            if tx.one("any_due_schedule", now=self._now(tx, now)) is None:
                return made
        with self._write() as tx:
            now = self._now(tx, now)
            for row in tx.all("claim_due_schedules", now=now, limit=limit):
                try:
                    cron = Cron.parse(row["cron"], row["timezone"])
                    step = plan(cron, row["catch_up"], as_seconds(row["next_run_at"]), now,
                                max_ticks=max_ticks)
                except TetherError:
                    continue
                jobs = [_tick_job(row, tick) for tick in step.ticks]
                new = ([j for j in self._insert_jobs(tx, jobs, now) if j is not None]
                       if jobs else [])
                made.extend(new)
                skipped = _missed(cron, row["catch_up"], as_seconds(row["next_run_at"]), now,
                                  step.ticks, max_ticks)
                if skipped:
                    tx.run("schedule_miss_insert", schedule=row["name"], project=row["project"],
                           first_tick=skipped[0], last_tick=skipped[-1], missed=len(skipped),
                           now=now)
                tx.run("advance_schedule", name=row["name"], next_run_at=step.next_run_at,
                       last_run_at=step.ticks[-1] if step.ticks else None,
                       last_job_id=new[-1].id if new else None, now=now)
        return made

