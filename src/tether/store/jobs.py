"""Submitting jobs and reading them back.

A submission is one transaction (the caller's, with ``conn``): its queue rows, the price
profile it pins, the job rows and their ``submitted`` events. An idempotency key that exists
returns the existing job, exactly as ``get_job`` reads it, or raises ``IdempotencyConflict``
when the configuration differs.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Sequence

from ..core.pricing import PriceProfile
from ..core.states import JobState
from ..errors import IdempotencyConflict
from ..records import Attempt, Event, Job
from .base import CallerConnection, NewJob
from .flowkeys import FlowKeys
from .rows import as_datetime, load_json, new_job, to_attempt, to_event, to_job
from .transitions import compact_json
from .tx import Row, Tx, present


class Jobs(FlowKeys):
    """Submission and the reads of jobs, their events and attempts."""

    def submit(self, jobs: Sequence[NewJob], *, conn: CallerConnection | None = None,
               profile: PriceProfile | None = None) -> list[tuple[Job, bool]]:
        """Insert jobs in one transaction (the caller's, with ``conn``); ``profile`` is the
        price profile they pin, stored in the same transaction. Whatever the batch size, the
        jobs are one statement, their events one more (PostgreSQL: the same one), and the
        existing jobs of repeated keys one lookup."""
        queues, pin = self._setup_rows(jobs, profile, conn)
        with self._write(conn) as tx:
            now = self._now(tx, None)
            self._write_setup(tx, queues, profile if pin else None, now)
            flowed = [i for i, j in enumerate(jobs) if j.flow_mode is not None]
            if flowed:
                new, flows = self._insert_with_flows(tx, jobs, flowed, now)
            else:
                new, flows = self._insert_jobs(tx, jobs, now), {}
            out = [flows.get(i) or ((job, True) if job is not None else None)
                   for i, job in enumerate(new)]
            repeats = [i for i, job in enumerate(new) if job is None and i not in flows]
            if repeats:
                found = self._jobs_by_keys(tx, [jobs[i] for i in repeats])
                for i in repeats:
                    out[i] = (self._existing(jobs[i], found), False)
        if conn is None:
            self._remember(queues, profile if pin else None)
        return [present(o) for o in out]

    def submit_ids(self, jobs: Sequence[NewJob], *,
                   profile: PriceProfile | None = None) -> list[int]:
        """``submit`` for a submitter that needs only the ids (``ctx.enqueue_many``'s
        children): the same transaction and rules, but no ``Job`` is built and a repeated
        key's job is read narrowly (``ids_of_keys``). A batch with flow keys is ``submit``'s."""
        if any(j.flow_mode is not None for j in jobs):
            return [job.id for job, _ in self.submit(jobs, profile=profile)]
        queues, pin = self._setup_rows(jobs, profile, None)
        with self._write() as tx:
            now = self._now(tx, None)
            self._write_setup(tx, queues, profile if pin else None, now)
            ids = [None if r is None else int(r["id"])
                   for r in self._insert_rows(tx, jobs, now)]
            repeats = [j for j, job_id in zip(jobs, ids, strict=True) if job_id is None]
            if repeats:
                found = iter(self._ids_by_keys(tx, repeats))
                ids = [next(found) if job_id is None else job_id for job_id in ids]
        self._remember(queues, profile if pin else None)
        if None in ids:  # pragma: no cover - a repeat's row vanished mid-transaction
            raise IdempotencyConflict("idempotency key conflict could not be resolved")
        return [present(job_id) for job_id in ids]

    def _write_setup(self, tx: Tx, queues: list[str], profile: PriceProfile | None,
                     now: float) -> None:
        """The queue rows and the price profile (when it must be written) a submission needs."""
        if profile is not None:
            self._save_profile(tx, profile, now)
        for queue in queues:
            tx.run("ensure_queue", name=queue, now=now)

    def _remember(self, queues: list[str], profile: PriceProfile | None) -> None:
        """After the commit: these rows need not be written again (``_setup_rows``)."""
        known = self._known_rows()
        known.update(queues)
        if profile is not None:
            known.add(("profile", profile.id))

    def _insert_with_flows(self, tx: Tx, jobs: Sequence[NewJob], flowed: list[int],
                           now: float) -> tuple[list[Job | None], dict[int, tuple[Job, bool]]]:
        """``_insert_jobs`` for a batch with flow keys: the others in one statement as
        always, then each flow-keyed job alone, in batch order (``store/flowkeys.py``)."""
        where = set(flowed)
        plain = [j for i, j in enumerate(jobs) if i not in where]
        inserted = iter(self._insert_jobs(tx, plain, now))
        new: list[Job | None] = [None if i in where else next(inserted)
                                 for i in range(len(jobs))]
        budgets: dict[int, Any] = {}
        flows = {}
        for i in flowed:
            spec = jobs[i]
            budgets.setdefault(id(spec.budget), self._json_param(spec.budget.to_dict()))
            flows[i] = self._submit_flow(tx, spec, now, _values(spec, budgets))
        return new, flows

    _submit_writes_events = False
    """True where ``insert_jobs`` also writes the submitted events (PostgreSQL)."""
    _submit_columns = False
    """True where ``insert_jobs`` takes the jobs as arrays (PostgreSQL, bound in binary), else
    as one JSON array of job objects. One job is ``insert_job``, its values bound one by one."""

    def _insert_jobs(self, tx: Tx, jobs: Sequence[NewJob], now: float | None) -> list[Job | None]:
        """Insert ``jobs`` with one statement; the new job at each position, or None where
        the idempotency key already existed (or came earlier in this batch). The statement
        returns only what the database chose (id, times, the stored payload); the rest of each
        Job comes from its spec."""
        times: dict[Any, Any] = {}
        out: list[Job | None] = []
        for j, r in zip(jobs, self._insert_rows(tx, jobs, now), strict=True):
            if r is None:
                out.append(None)
                continue
            created, run_after = r["created_at"], r["run_after"]
            if created not in times:
                times[created] = as_datetime(created)
            if run_after not in times:
                times[run_after] = as_datetime(run_after)
            payload = r["payload"]
            out.append(new_job(j, int(r["id"]), times[created], times[run_after],
                               None if payload == "null" else load_json(payload)))
        return out

    def _insert_rows(self, tx: Tx, jobs: Sequence[NewJob], now: float | None) -> list[Row | None]:
        """``_insert_jobs``' statement (and, where it does not write them, the submitted
        events): the inserted row at each position, or None for a key that existed. Rows are
        matched back by key, and unkeyed rows by id order, which follows insertion order."""
        if not jobs:
            return []
        batch = _first_of_each_key(jobs)
        budgets: dict[int, Any] = {}
        for j in batch:
            if id(j.budget) not in budgets:
                budgets[id(j.budget)] = self._json_param(j.budget.to_dict())
        if len(batch) == 1:
            rows = tx.all("insert_job", now=now, **_values(batch[0], budgets))
        elif self._submit_columns:
            rows = tx.all("insert_jobs", now=now, **_columns(batch, budgets))
        else:
            rows = tx.all("insert_jobs", now=now, jobs=_objects(batch, budgets))
        keyed = {(r["project"], r["idempotency_key"]): r for r in rows
                 if r["idempotency_key"] is not None}
        plain = iter(sorted((r for r in rows if r["idempotency_key"] is None),
                            key=lambda r: r["id"]))
        out: list[Row | None] = [
            next(plain) if j.idempotency_key is None
            else keyed.pop((j.project, j.idempotency_key), None) for j in jobs]
        if not self._submit_writes_events:
            tx.many("insert_event", [self._event_row(
                int(r["id"]), 1, present(now), "submitted", None, "queued", None,
                {"type": j.type, "queue": j.queue, "idempotency_key": j.idempotency_key})
                for j, r in zip(jobs, out, strict=True) if r is not None])
        return out

    def _jobs_by_keys(self, tx: Tx, jobs: Sequence[NewJob]) -> dict[tuple[str, str | None], Row]:
        """The existing rows (as ``get_job`` reads them) of these jobs' keys, one statement."""
        keys = sorted({(j.project, j.idempotency_key) for j in jobs})
        rows = tx.all("jobs_by_keys", keys=compact_json([list(k) for k in keys]))
        return {(r["project"], r["idempotency_key"]): r for r in rows}

    def ids_of_keys(self, jobs: Sequence[NewJob]) -> list[int | None]:
        """The job each spec's idempotency key names, None where it names none (or the spec
        has no key): a narrow read per project (no Job is built, nothing is written), for a
        submitter that only needs the ids of a batch it has likely submitted before. A key
        that names a job of another configuration raises ``IdempotencyConflict``, as
        submitting it again would."""
        with self._read() as tx:
            return self._ids_by_keys(tx, jobs)

    def _ids_by_keys(self, tx: Tx, jobs: Sequence[NewJob]) -> list[int | None]:
        by_project: dict[str, list[str]] = {}
        for j in jobs:
            if j.idempotency_key is not None:
                by_project.setdefault(j.project, []).append(j.idempotency_key)
        found: dict[tuple[str, str | None], Row] = {}
        for project, keys in by_project.items():
            for r in tx.all("job_ids_by_keys", project=project, keys=self._array_param(keys)):
                found[(project, r["idempotency_key"])] = r
        out: list[int | None] = []
        for j in jobs:
            row = found.get((j.project, j.idempotency_key))
            if row is not None and row["input_config_hash"] != j.input_config_hash:
                self._existing(j, found)  # raises IdempotencyConflict
            out.append(None if row is None else int(row["id"]))
        return out

    @staticmethod
    def _existing(spec: NewJob, found: dict[tuple[str, str | None], Row]) -> Job:
        """The job a repeated key names, or IdempotencyConflict for another configuration."""
        existing = found.get((spec.project, spec.idempotency_key))
        if existing is None:  # pragma: no cover - conflict row vanished mid-transaction
            raise IdempotencyConflict("idempotency key conflict could not be resolved")
        if existing["input_config_hash"] != spec.input_config_hash:
            raise IdempotencyConflict(
                f"idempotency key {spec.idempotency_key!r} in project {spec.project!r} "
                f"belongs to job {existing['id']} with a different configuration",
                job_id=existing["id"], idempotency_key=spec.idempotency_key)
        return to_job(existing)

    def _setup_rows(self, jobs: Sequence[NewJob], profile: Any,
                    conn: Any) -> tuple[list[str], bool]:
        """The queue rows and whether the price profile a submit must still write. Queue and
        profile rows are never deleted, so once this store has committed one it need not
        write it again (a caller's transaction may still roll back: nothing is skipped)."""
        known = self._known_rows() if conn is None else set()
        queues = sorted({j.queue for j in jobs} - known)
        pin = profile is not None and ("profile", profile.id) not in known
        return queues, pin

    def _known_rows(self) -> set:
        """Queue names and ("profile", id) pairs this store has committed."""
        known = self.__dict__.get("_known")
        if known is None:
            known = self.__dict__.setdefault("_known", set())
        return known

    # --- reads ---------------------------------------------------------------------------

    def get_job(self, job_id: int) -> Job | None:
        with self._read() as tx:
            row = tx.one("get_job", id=job_id)
        return to_job(row) if row else None

    def list_jobs(self, *, projects: Iterable[str] | None = None, state: str | None = None,
                  type: str | None = None, queue: str | None = None, search: str | None = None,
                  before_id: int | None = None, limit: int = 50) -> list[Job]:
        """Newest first. One statement for each shape of filter (a search; one project and a
        state; a state; neither) so that each is planned on its own index, whatever the size
        of the table."""
        if state is not None:
            state = str(JobState(state))
        scope = None if projects is None else sorted(set(projects))
        params: dict[str, Any] = {"projects": self._list_param(scope), "state": state,
                                  "type": type, "queue": queue, "before_id": before_id,
                                  "limit": limit}
        if search is not None:
            query = "list_jobs_search"
            params.update(search=search, search_id=_as_id(search))
        elif state is None:
            query = "list_jobs"
        elif scope is not None and len(scope) == 1:
            query = "list_jobs_in_project_state"
            params.update(project=scope[0])
        else:
            query = "list_jobs_in_state"
        with self._read() as tx:
            rows = tx.all(query, **params)
        return [to_job(r) for r in rows]

    def events(self, job_id: int, *, after: int = 0, limit: int = 1000) -> list[Event]:
        with self._read() as tx:
            rows = tx.all("list_events", job_id=job_id, after=after, limit=limit)
        return [to_event(r) for r in rows]

    def attempts(self, job_id: int) -> list[Attempt]:
        with self._read() as tx:
            rows = tx.all("list_attempts", job_id=job_id)
        return [to_attempt(r) for r in rows]


def _as_id(search: str) -> int | None:
    """``search`` as a job id when it spells one exactly (``"42"``, not ``"042"``), else None."""
    if search.isascii() and search.isdigit() and str(int(search)) == search:
        value = int(search)
        return value if 0 < value < 2 ** 63 else None
    return None


def _first_of_each_key(jobs: Sequence[NewJob]) -> Sequence[NewJob]:
    """``jobs`` less those whose key came earlier in the batch: the statement is sent each
    key once, so no row of it is refused (a refused row may use up an id)."""
    keys = [(j.project, j.idempotency_key) for j in jobs if j.idempotency_key is not None]
    if len(set(keys)) == len(keys):
        return jobs
    seen: set[tuple[str, str]] = set()
    out = []
    for j in jobs:
        if j.idempotency_key is not None:
            if (j.project, j.idempotency_key) in seen:
                continue
            seen.add((j.project, j.idempotency_key))
        out.append(j)
    return out


def _objects(jobs: Sequence[NewJob], budgets: dict[int, Any]) -> str:
    """``insert_jobs``' jobs as one JSON array of objects, in order (``ord``)."""
    return compact_json([{
        "ord": i, "type": j.type, "project": j.project, "queue": j.queue,
        "priority": j.priority, "run_after": j.run_after, "max_attempts": j.max_attempts,
        "safe_to_retry": j.safe_to_retry, "idempotency_key": j.idempotency_key,
        "input_config_hash": j.input_config_hash, "payload": j.payload_json,
        "budget": budgets[id(j.budget)], "price_profile": j.price_profile,
        "estimated_cost_usd": j.estimated_cost_usd, "parent_id": j.parent_id,
        "detached": j.detached, "trace_context": j.trace_context, "version": j.version}
        for i, j in enumerate(jobs)])


def _values(job: NewJob, budgets: dict[int, Any]) -> dict[str, Any]:
    """``insert_job``'s one job."""
    return {"type": job.type, "project": job.project, "queue": job.queue,
            "priority": job.priority, "run_after_seconds": job.run_after,
            "max_attempts": job.max_attempts, "safe_to_retry": bool(job.safe_to_retry),
            "idempotency_key": job.idempotency_key, "input_config_hash": job.input_config_hash,
            "payload": job.payload_json, "budget": budgets[id(job.budget)],
            "price_profile": job.price_profile, "estimated_cost_usd": job.estimated_cost_usd,
            "parent_id": job.parent_id, "detached": bool(job.detached),
            "trace_context": job.trace_context, "version": job.version}


def _columns(jobs: Sequence[NewJob], budgets: dict[int, Any]) -> dict[str, Any]:
    """``insert_jobs``' jobs as lists: per job, and per shape (what jobs of a batch mostly
    share). A list of nothing but None is None: it has no element type to bind it by."""
    shapes: dict[tuple, int] = {}
    index = []
    for j in jobs:
        shape = (j.type, j.project, j.queue, j.priority, j.max_attempts, j.safe_to_retry,
                 budgets[id(j.budget)], j.price_profile, j.parent_id, j.detached,
                 j.trace_context, j.version)
        n = shapes.get(shape)
        if n is None:
            n = shapes[shape] = len(shapes) + 1
        index.append(n)
    (types, projects, queues, priorities, max_attempts, safe, budget, profiles, parents,
     detached, traces, versions) = (list(column) for column in zip(*shapes, strict=True))
    return {"shapes": index, "payloads": [j.payload_json for j in jobs],
            "hashes": [j.input_config_hash for j in jobs],
            "keys": _nullable([j.idempotency_key for j in jobs]),
            "run_afters": _nullable([j.run_after for j in jobs]),
            "estimates": _nullable([j.estimated_cost_usd for j in jobs]),
            "types": types, "projects": projects, "queues": queues, "priorities": priorities,
            "max_attempts": max_attempts, "safe_to_retry": [bool(v) for v in safe],
            "budgets": budget, "price_profiles": _nullable(profiles),
            "parents": _nullable(parents), "detached": [bool(v) for v in detached],
            "trace_contexts": _nullable(traces), "versions": versions}


def _nullable(values: list) -> list | None:
    return None if values.count(None) == len(values) else values
