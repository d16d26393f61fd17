"""Forks and retries from a stage, asked for by the chaos runner while workers are killed.

A share of the ``chaos_pipeline`` jobs is forked from a random stage as soon as the source
reached it (the source running, finished, or paused: only its committed checkpoints count); another share
carries ``review_needs`` and fails in review until the runner creates the file and retries it
from a random stage, so the calls of the dropped stages are paid again on purpose. Each fork
has an idempotency key, so a request whose answer was lost (the database restarting) is sent
again without making a second fork. The invariant checker then sees both: carried rows at
cost 0 in the forks, and one ``call_repaid`` event per key a retry paid again.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tether import JobState, Tether
from tether.errors import InvalidArgument, JobStateError, StoreError

STAGES = ("plan", "draft", "review", "assemble")
SETTLED = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED,
                     JobState.PAUSED})


class Reruns:
    """The forks and retries from a stage of one chaos run."""

    def __init__(self, app: Tether, rng: random.Random, out: Path, *, fork_share: float,
                 retry_share: float) -> None:
        self.app, self.rng, self.out = app, rng, out
        self.fork_share, self.retry_share = fork_share, retry_share
        self.to_fork: dict[int, tuple[str, str]] = {}
        self.to_retry: set[int] = set()
        self.forks: list[int] = []
        self.retries = 0

    def prepare(self, spec: dict[str, Any]) -> None:
        """Mark a pipeline spec, before it is submitted, to fail in review until retried."""
        if spec["type"] == "chaos_pipeline" and self.rng.random() < self.retry_share:
            spec["payload"]["review_needs"] = str(self.out / f"review-{spec['idempotency_key']}")

    def submitted(self, spec: dict[str, Any], job_id: int) -> None:
        if spec["type"] != "chaos_pipeline":
            return
        if "review_needs" in spec["payload"]:
            self.to_retry.add(job_id)
        elif self.rng.random() < self.fork_share:
            stage = self.rng.choice(STAGES[2:])  # carrying the paid drafts
            self.to_fork[job_id] = (f"fork-{spec['idempotency_key']}", stage)

    @property
    def busy(self) -> bool:
        """Whether a fork or a retry is still to be asked for."""
        return bool(self.to_fork or self.to_retry)

    def step(self) -> None:
        """Ask for the forks and retries whose moment came; a store error leaves them for the
        next step (a fork sent again carries its key: still one fork)."""
        for job_id, (key, stage) in list(self.to_fork.items()):
            try:
                self._fork(job_id, key, stage)
            except StoreError:
                pass
        for job_id in list(self.to_retry):
            try:
                self._retry(job_id)
            except StoreError:
                pass

    def _fork(self, job_id: int, key: str, stage: str) -> None:
        """Fork from ``stage`` once the source reached it (a settled source that never did is
        forked from ``draft``, or not at all)."""
        source = self.app.get(job_id)
        try:
            fork = self.app.fork(job_id, from_stage=stage, idempotency_key=key,
                                 payload=dict(source.payload, concurrency=1))
        except InvalidArgument:  # that stage not reached yet
            if source.state in SETTLED:
                if stage == STAGES[1]:
                    del self.to_fork[job_id]
                else:
                    self.to_fork[job_id] = (key, STAGES[1])
            return
        del self.to_fork[job_id]
        self.forks.append(fork.id)

    def _retry(self, job_id: int) -> None:
        job = self.app.get(job_id)
        if job.state != JobState.FAILED:
            if job.state in SETTLED:  # succeeded or paused for budget before review
                self.to_retry.discard(job_id)
            return
        Path(job.payload["review_needs"]).touch()
        try:
            try:
                self.app.retry(job_id, from_stage=self.rng.choice(STAGES))
            except InvalidArgument:  # failed before the stage picked: from the first
                self.app.retry(job_id, from_stage=STAGES[0])
        except JobStateError:  # retried already (an answer lost to a restart)
            pass
        self.to_retry.discard(job_id)
        self.retries += 1
