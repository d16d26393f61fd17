"""Fetch-ahead: how many claimed jobs a worker holds beyond its busy slots.

A worker that claims only as many jobs as it has free slots pays one claim (one commit) for
every few short jobs, and its slots sit idle during each round trip. Holding a few claimed jobs
ready lets one claim carry a large batch. A held job is leased (and, on its first attempt,
already ``running``) while it waits, and no other worker can take it, so the worker holds
only what its slots will reach soon: ``horizon_s`` worth of work at the jobs' observed
durations. Jobs that take seconds (LLM pipelines) are never held ahead; no-op jobs are held
up to ``max_ahead``. Until a duration has been observed nothing is held.

Pure logic: the worker feeds it durations and asks for a target; tests drive it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Prefetch:
    concurrency: int
    horizon_s: float = 0.05
    """How far ahead (in seconds of work for all slots together) the worker may hold jobs."""
    max_ahead: int | None = None
    """The most jobs held beyond the slots (default: 32 per slot, at most 512; 0 disables)."""
    smoothing: float = 0.2
    mean_s: float | None = field(default=None, init=False)
    """Exponential moving average of a job's run time; None until one has finished."""

    def __post_init__(self) -> None:
        if self.max_ahead is None:
            self.max_ahead = min(512, 32 * self.concurrency)
        if self.max_ahead < 0:
            raise ValueError("max_ahead must be >= 0")

    def observe(self, seconds: float) -> None:
        """One job's run time (claim-to-outcome inside the slot)."""
        seconds = max(0.0, seconds)
        if self.mean_s is None:
            self.mean_s = seconds
        else:
            self.mean_s += self.smoothing * (seconds - self.mean_s)

    @property
    def ahead(self) -> int:
        """How many jobs to hold beyond the slots now."""
        if self.mean_s is None or not self.max_ahead:
            return 0
        if self.mean_s <= 0:
            return self.max_ahead
        return max(0, min(self.max_ahead, int(self.concurrency * self.horizon_s / self.mean_s)))

    def want(self, held: int) -> int:
        """How many to claim when the worker holds ``held`` jobs (running or waiting). Claims
        are made in batches: once the slots are full, only when at least half the fetch-ahead
        has been used up."""
        ahead = self.ahead
        want = self.concurrency + ahead - held
        if want <= 0:
            return 0
        if held >= self.concurrency and want < max(1, ahead // 2):
            return 0
        return want
