"""The facade's workflow part: signals to waiting jobs and the waits a job has made.

``Tether`` inherits these methods; every interface (CLI, REST, MCP, dashboard) calls them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core import validate
from ..core.serialize import dumps, loads
from ..core.waits import KINDS
from ..errors import InvalidArgument
from ..records import Job, Wait
from ..store.tx import present
from .host import FacadeHost


@dataclass(frozen=True)
class WaitingFor:
    """What a waiting job is blocked on, as every interface shows it: a signal's name,
    prompt, schema and deadline (``wake_at``); a timer's wake time; a gather's children and
    how many of them have finished (read when asked, so it is as fresh as the read)."""

    kind: str
    key: str
    signal: str | None = None
    prompt: str | None = None
    schema: Any = None
    wake_at: datetime | None = None
    children: int | None = None
    children_done: int | None = None
    since: datetime | None = None
    batch: dict[str, Any] | None = None
    """A provider batch's (``ProviderBatch.to_dict``): provider id, items done, failed and
    in all, reserved money (settled and standard-price money once settled)."""
    callbacks: tuple[dict[str, Any], ...] = ()
    """A signal wait's callback URLs (``Callback.to_dict``, never the URL itself: only its
    token's hash is kept): id, who made it, expiry, state."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "signal": self.signal,
                "prompt": self.prompt, "schema": self.schema,
                "wake_at": self.wake_at.isoformat() if self.wake_at else None,
                "children": self.children, "children_done": self.children_done,
                "since": self.since.isoformat() if self.since else None,
                "batch": self.batch, "callbacks": list(self.callbacks)}


class WorkflowsPart(FacadeHost):
    """``signal``, ``waits``, ``waiting_for``, ``waiting_summary``, ``list_waiting``, and
    ``submit_children`` for ``ctx.enqueue_many``."""

    def submit_children(self, jobs: Iterable[Mapping[str, Any]], *,
                        again: bool = False) -> list[int]:
        """The ids of a batch of child jobs, in order, submitted as ``submit_many`` submits
        them (one transaction; one job per key; a key of another configuration raises
        ``IdempotencyConflict``). ``again``: the batch was likely submitted before (its parent
        replays): its keys are read first, narrowly, and only the jobs not found are
        submitted, so a replayed fan-out writes nothing and builds no ``Job``."""
        specs = self._resolver().many(jobs)
        ids: list[int | None] = [None] * len(specs)
        if again:  # a flow-keyed job (singleton, debounce) is always decided by the store
            keyed = [i for i, spec in enumerate(specs) if spec.flow_mode is None]
            found = self.store.ids_of_keys([specs[i] for i in keyed])
            for i, job_id in zip(keyed, found, strict=True):
                ids[i] = job_id
        missing = [i for i, job_id in enumerate(ids) if job_id is None]
        if missing:
            made = self.store.submit_ids([specs[i] for i in missing],
                                         profile=self.price_profile)
            for i, job_id in zip(missing, made, strict=True):
                ids[i] = job_id
        return [present(job_id) for job_id in ids]

    def signal(self, job_id: int, name: str, value: Any = None, *,
               projects: Iterable[str] | None = None) -> Job:
        """Send signal ``name`` with ``value`` (JSON) to a job. A job waiting for it
        (``ctx.wait_for_signal``) is queued at once; a job not waiting yet finds it in its
        mailbox when it does. Each signal is consumed by exactly one wait. A finished job
        takes no signals (``JobStateError``)."""
        name = validate.signal_name(name)
        value = loads(dumps(value, what="signal value"))
        return self.store.send_signal(validate.job_id(job_id), name, value, projects=projects)

    def waits(self, job_id: int, *, projects: Iterable[str] | None = None) -> list[Wait]:
        """Every wait of a job, oldest first: gathers, timers and signal waits, with what each
        waits for (a signal wait's prompt and schema) and how it ended."""
        return self.store.waits(validate.job_id(job_id), projects=projects)

    def waiting_for(self, job_id: int, *,
                    projects: Iterable[str] | None = None) -> Wait | None:
        """The open wait a waiting job is blocked on, if any."""
        return self.store.current_wait(validate.job_id(job_id), projects=projects)

    def waiting_summary(self, job_id: int, *,
                        projects: Iterable[str] | None = None) -> WaitingFor | None:
        """``waiting_for`` as the interfaces show it, a gather's children and how many have
        ended taken from the counts its wait keeps: a constant number of reads, however many
        children (``Store.gather_progress``). None unless the job is waiting."""
        wait = self.store.current_wait(validate.job_id(job_id), projects=projects,
                                       children=False)
        if wait is None:
            return None
        job = self.store.get_job(validate.job_id(job_id))
        if job is None or job.state != "waiting":
            return None
        children = done = None
        batch = None
        made: tuple[dict[str, Any], ...] = ()
        if wait.kind == "signal":
            made = tuple(c.to_dict() for c in self.store.callbacks(wait.job_id, key=wait.key))
        elif wait.kind == "children":
            children, done = self.store.gather_progress(wait.job_id, wait.key) or (0, 0)
        elif wait.kind == "provider_batch":
            record = self.store.get_batch(wait.job_id, wait.key)
            batch = record.to_dict() if record is not None else None
        return WaitingFor(kind=wait.kind, key=wait.key, signal=wait.signal, prompt=wait.prompt,
                          schema=wait.schema, wake_at=wait.wake_at, children=children,
                          children_done=done, since=wait.created_at, batch=batch,
                          callbacks=made)

    def list_waiting(self, kind: str = "signal", *, project: str | None = None,
                     projects: Iterable[str] | None = None, type: str | None = None,
                     queue: str | None = None, search: str | None = None,
                     before_id: int | None = None, limit: int = 50) -> list[Job]:
        """Waiting jobs blocked on a wait of ``kind``, newest first. ``"signal"`` is the
        dashboard's "Waiting for me": jobs that wait for a person's (or a program's) answer."""
        if kind not in KINDS:
            raise InvalidArgument(f"kind must be one of {', '.join(KINDS)}, got {kind!r}",
                                  argument="kind")
        validate.texts(project=project, type=type, queue=queue, search=search)
        validate.page(before_id, limit)
        scope = None if projects is None else set(projects)
        if project is not None:
            scope = {project} if scope is None else scope & {project}
        return self.store.list_waiting(kind, projects=scope, type=type, queue=queue,
                                       search=search, before_id=before_id, limit=limit)
