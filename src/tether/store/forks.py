"""Fork a job from a stage, and retry a failed job from a stage.

A fork is a NEW job whose finished stages before ``from_stage`` come from its source: the
checkpoint rows (naming the same content-addressed blobs) and the ``done`` journal rows of
those stages, and of the calls made before the first stage (stage null: every fork shares
them), are copied, so the fork's code skips those stages and never calls their keys again.
Their money is not counted again: the fork's budget starts at zero, and its ledger
holds one row per carried call at cost 0 with ``reused_from`` (the job that paid) and
``reused_cost_usd`` (what it paid there, for information). Everything happens in one
transaction with the source row locked: the new job, the copies, ``forked_to`` on the
source and ``forked_from`` on the fork commit together or not at all.

A retry from a stage drops a failed job's checkpoints from ``from_stage`` on and the finished
journal rows of those stages (so their calls are made, and paid, again), records a
``call_repaid`` event per dropped answer (as a replay's ``repay`` does: ``replays.py``) and
queues it, also in one transaction.

Stage order is the order of the source's checkpoints (``position``, the order in which the
job reached its stages); a type that declares its stages also names stages not reached yet.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from collections.abc import Iterable, Sequence

from ..core.pricing import PriceProfile
from ..core.states import JobState, operator_target
from ..errors import InvalidArgument
from ..records import Job
from .base import NewJob
from .flowkeys import check_singleton_free
from .jobs import Jobs
from .replays import superseded
from .rows import as_decimal, to_job
from .tx import Row, Tx, present


def carried_stages(job: Row, checkpoints: Sequence[Row], from_stage: str,
                   declared: Sequence[str] | None) -> list[str]:
    """The stages of ``job`` before ``from_stage``, in order; each is finished (checkpointed).

    ``from_stage`` must be a stage the job finished, the stage it was in when it stopped, or a
    stage its type declares whose earlier stages all finished; anything else is an
    ``InvalidArgument`` naming what the job does have."""
    job_id = job["id"]
    done = [c["stage"] for c in sorted(checkpoints, key=lambda c: c["position"])]
    if not isinstance(from_stage, str) or not from_stage:
        raise InvalidArgument("from_stage must be a non-empty stage name")
    if from_stage in done:
        return done[:done.index(from_stage)]
    if declared and from_stage in declared:
        before = list(declared[:list(declared).index(from_stage)])
        missing = [s for s in before if s not in done]
        if missing:
            raise InvalidArgument(
                f"job {job_id} never finished stage {missing[0]!r}, which comes before "
                f"{from_stage!r}; it finished: {', '.join(done) or 'no stage'}",
                job_id=job_id, from_stage=from_stage)
        return before
    if from_stage == job.get("stage"):
        return done
    known = list(declared) if declared else done
    raise InvalidArgument(
        f"job {job_id} has no stage {from_stage!r}; its stages are: "
        f"{', '.join(known) or 'none finished'}", job_id=job_id, from_stage=from_stage)


class Forks(Jobs):
    """``fork`` and ``retry_from``: one transaction each."""

    def fork(self, source_id: int, spec: NewJob, *, from_stage: str,
             declared: Sequence[str] | None = None, projects: Iterable[str] | None = None,
             profile: PriceProfile | None = None) -> tuple[Job, bool]:
        """Insert ``spec`` as a fork of job ``source_id`` from ``from_stage`` (see the module
        docstring); ``profile`` is the price profile the fork pins, saved in the same
        transaction. Returns the fork and True; or, when ``spec``'s idempotency key already
        names a job of the same configuration (its hash names the source and stage too),
        that job and False, having carried nothing (``IdempotencyConflict`` for another
        configuration). JobNotFound for a source outside ``projects``; InvalidArgument for a
        stage the source does not have or did not reach, or a fork into another project."""
        with self._write() as tx:
            now = self._now(tx, None)
            src = self._locked(tx, source_id, projects)
            if spec.project != src["project"]:
                raise InvalidArgument(
                    f"a fork stays in its source's project {src['project']!r}, not "
                    f"{spec.project!r}: the stages it reuses were paid there",
                    job_id=source_id, project=spec.project)
            if spec.type != src["type"]:
                raise InvalidArgument(f"a fork has its source's type {src['type']!r}")
            stages = carried_stages(src, tx.all("list_checkpoints", job_id=source_id),
                                    from_stage, declared)
            if profile is not None:
                self._save_profile(tx, profile, now)
            tx.run("ensure_queue", name=spec.queue, now=now)
            (job,) = self._insert_jobs(tx, [spec], now)
            if job is None:
                return self._existing(spec, self._jobs_by_keys(tx, [spec])), False
            params = {"job_id": job.id, "source_id": source_id, "now": now,
                          "stages": self._list_param(stages)}
            tx.run("fork_checkpoints", **params)
            calls = tx.run("fork_journal", **params)
            tx.run("fork_ledger", **params)
            reused = sum((as_decimal(r["reused_cost_usd"])
                          for r in tx.all("list_ledger", job_id=job.id)), Decimal(0))
            self._note(tx, source_id, "forked_to", now, None,
                       {"job_id": job.id, "from_stage": from_stage})
            self._note(tx, job.id, "forked_from", now, None,
                       {"job_id": source_id, "from_stage": from_stage, "stages": stages,
                        "calls": calls, "reused_cost_usd": str(reused)})
            return to_job(present(tx.one("get_job", id=job.id))), True

    def retry_from(self, job_id: int, from_stage: str, *,
                   declared: Sequence[str] | None = None,
                   projects: Iterable[str] | None = None) -> Job:
        """Queue a failed job again after dropping its checkpoints from ``from_stage`` on and
        the finished journal rows of those stages (their calls are made and paid again: the
        ledger keeps every row it had; each dropped answer is kept in a ``call_repaid``
        event). JobStateError unless the job is failed."""
        with self._write() as tx:
            now = self._now(tx, None)
            row = self._locked(tx, job_id, projects)
            to = operator_target("retry", row["state"])
            checkpoints = tx.all("list_checkpoints", job_id=job_id)
            kept = carried_stages(row, checkpoints, from_stage, declared)
            dropped = [c["stage"] for c in checkpoints if c["stage"] not in kept]
            kept_param = self._list_param(kept)
            repaid = tx.all("dropped_answers", job_id=job_id, kept=kept_param)
            tx.run("drop_checkpoints", job_id=job_id, kept=kept_param)
            calls = tx.run("drop_journal", job_id=job_id, kept=kept_param)
            for old in repaid:
                self._note(tx, job_id, "call_repaid", now, None,
                           {**superseded(old), "from_stage": from_stage})
            self._retry_transition(tx, row, to, now, {
                "action": "retry", "from_stage": from_stage, "dropped_stages": dropped,
                "dropped_calls": calls})
            return to_job(present(tx.one("get_job", id=job_id)))

    def _retry_transition(self, tx: Tx, row: Row, to: JobState, now: float,
                          data: dict[str, Any]) -> None:
        check_singleton_free(tx, row)
        self._transition(tx, row, to, now=now, kind="retry", data=data, run_after=now,
                         max_attempts=max(row["max_attempts"], row["attempt_count"] + 1),
                         error_code=None, error_summary=None)
