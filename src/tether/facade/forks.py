"""Fork a job from a stage, and retry a failed job (optionally from a stage): the facade part.

``Tether`` inherits this part; the rules and the one transaction each takes live in
``store/forks.py``. What a fork promises (docs/workflows.md, "Fork from a stage"): the stages
before ``from_stage`` are not run again and their calls are neither made nor counted again in
the fork's budget; the fork's ledger shows each of them as reused from the job that paid.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any
from collections.abc import Iterable, Mapping

from ..core import validate
from ..core.budget import Budget
from ..records import Job
from ..registry import JobType
from ..submission import as_budget, checked_name
from .host import FacadeHost


def fork_hash(config_hash: str, source_id: int, from_stage: str) -> str:
    """A fork's identity for its idempotency key: its configuration, and which job and stage
    it forks (the same payload forked from another stage is another fork)."""
    text = f"{config_hash}\nfork of {source_id} from {from_stage}"
    return hashlib.sha256(text.encode()).hexdigest()


class ForksPart(FacadeHost):
    """``fork`` and ``retry`` of the facade."""

    def fork(self, job_id: int, *, from_stage: str, payload: Any = None,
             budget: Budget | Mapping[str, Any] | None = None, project: str | None = None,
             idempotency_key: str | None = None,
             projects: Iterable[str] | None = None) -> Job:
        """A new job of ``job_id``'s type that starts at ``from_stage``: the source's finished
        stages before it (checkpoints and their done calls) and its done calls made before its
        first stage are carried over, so they are not run, paid or counted again; the fork's
        ledger lists those calls at cost 0 as reused from the job that paid for them.
        ``payload`` (default: the source's) and ``budget`` (default: the source's limits) are
        the fork's own; the fork stays in the source's project (``project``, if given, must
        name it). Records ``forked_to`` on the source and ``forked_from`` on the fork.
        ``invalid_argument`` for a stage the source does not have or never reached;
        ``job_not_found`` for a source outside ``projects``.

        With ``idempotency_key``, forking again with the same key, source, stage and
        configuration returns the fork already made (nothing is carried twice), and anything
        else under that key in the project raises ``IdempotencyConflict``, as ``submit``."""
        return self.fork_with_status(job_id, from_stage=from_stage, payload=payload,
                                     budget=budget, project=project,
                                     idempotency_key=idempotency_key, projects=projects)[0]

    def fork_with_status(self, job_id: int, *, from_stage: str, payload: Any = None,
                         budget: Budget | Mapping[str, Any] | None = None,
                         project: str | None = None, idempotency_key: str | None = None,
                         projects: Iterable[str] | None = None) -> tuple[Job, bool]:
        """Like ``fork``; also says whether the fork was made (False: an idempotent repeat)."""
        validate.name(from_stage, "stage")
        source = self.get(validate.job_id(job_id), projects=projects)
        target = source.project if project is None else checked_name(project, "project")
        limits = source.budget.limits if budget is None else as_budget(budget)
        spec = self._resolver().one(
            source.type, source.payload if payload is None else payload, project=target,
            queue=source.queue, priority=source.priority, max_attempts=source.max_attempts,
            budget=limits, idempotency_key=idempotency_key, flow_control=False)
        spec = dataclasses.replace(spec, safe_to_retry=source.safe_to_retry,
                                   version=source.version,
                                   input_config_hash=fork_hash(spec.input_config_hash,
                                                               source.id, from_stage))
        return self.store.fork(source.id, spec, from_stage=from_stage,
                               declared=self._declared_stages(source.type),
                               projects=projects, profile=self.price_profile)

    def retry(self, job_id: int, *, from_stage: str | None = None,
              projects: Iterable[str] | None = None) -> Job:
        """Queue a failed job again (never automatic). With ``from_stage``, first drop its
        checkpoints from that stage on and the finished calls of those stages: the job runs
        them again and those calls are made and paid again (by choice: a retry from a stage
        is asked for because their results are not wanted), each after a ``call_repaid``
        event keeping the dropped answer."""
        if from_stage is None:
            return self.store.control(validate.job_id(job_id), "retry", projects=projects)
        validate.name(from_stage, "stage")
        job = self.get(validate.job_id(job_id), projects=projects)
        return self.store.retry_from(job.id, from_stage,
                                     declared=self._declared_stages(job.type),
                                     projects=projects)

    def _declared_stages(self, type: str) -> list[str] | None:
        job_type = self.registry.find(type)
        if job_type is None or not job_type.stages:
            return None
        return [JobType.stage_name(fn) for fn in job_type.stages]

