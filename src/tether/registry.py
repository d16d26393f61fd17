"""Job types: what a name means (its function or stages) and how it may be retried."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from collections.abc import Callable, Sequence

from .core import validate
from .core.budget import Budget
from .core.flowkeys import FlowRule
from .core.retry import RetryPolicy
from .errors import ConfigurationError, InvalidArgument, UnknownJobType

JobFn = Callable[..., Any]


@dataclass(frozen=True)
class JobType:
    """A registered job type.

    ``fn(ctx, payload)`` runs the job; a ``stages`` list instead runs each ``stage(ctx, value)``
    in order, feeding each stage the previous stage's output (the first gets the payload),
    checkpointing every output. ``safe_to_retry`` says whether a job whose worker vanished may be
    restarted automatically (from its checkpoints) or must wait for an operator (``interrupted``).
    """

    name: str
    fn: JobFn | None = None
    stages: tuple[JobFn, ...] = ()
    safe_to_retry: bool = True
    max_attempts: int = 3
    queue: str = "default"
    priority: int = 0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    budget: Budget | None = None
    estimator: Callable[[Any], Any] | None = None
    on_change: str = "pause"
    """What a replay does with a call or stage that changed since it was recorded: ``pause``,
    ``reuse`` or ``repay`` (``job/replay.py``)."""
    version: str = ""
    """Stored with every job submitted as this type ("" unversioned); a worker claims a job
    only if its type serves the job's version (``core/serving.py``)."""
    replays: frozenset[str] | None = frozenset()
    """Other versions this code can replay, besides its own; None: every version."""
    flow: FlowRule | None = None
    """Singleton or debounce per key (``core/flowkeys.py``), or None."""

    def __post_init__(self) -> None:
        if (self.fn is None) == (not self.stages):
            raise ConfigurationError(f"job type {self.name!r} needs a function or stages, not both")
        try:  # refused at registration, not at the first submit
            validate.max_attempts(self.max_attempts)
            validate.priority(self.priority)
            validate.on_change(self.on_change)
            validate.version(self.version)
            for other in self.replays or ():
                validate.version(other, "a version in replays")
        except InvalidArgument as exc:
            raise ConfigurationError(f"job type {self.name!r}: {exc.message}") from None

    def serves(self, version: str) -> bool:
        """Whether this code claims a job of this type submitted at ``version``."""
        return self.replays is None or version == self.version or version in self.replays

    @cached_property
    def is_async(self) -> bool:
        return self.fn is not None and inspect.iscoroutinefunction(self.fn)

    @staticmethod
    def stage_name(fn: JobFn) -> str:
        return getattr(fn, "__tether_stage__", None) or fn.__name__

    @staticmethod
    def stage_version(fn: JobFn) -> str | None:
        """The version a stage function declares (``@stage(version=...)``), or None."""
        return getattr(fn, "__tether_version__", None)


class Registry:
    def __init__(self) -> None:
        self._types: dict[str, JobType] = {}

    def add(self, job_type: JobType) -> JobType:
        if job_type.name in self._types and self._types[job_type.name] != job_type:
            raise ConfigurationError(f"job type {job_type.name!r} is registered twice")
        self._types[job_type.name] = job_type
        return job_type

    def find(self, name: str) -> JobType | None:
        """The job type registered as ``name``, or None."""
        return self._types.get(name)

    def get(self, name: str) -> JobType:
        """The job type registered as ``name``; ``UnknownJobType`` if there is none."""
        try:
            return self._types[name]
        except KeyError:
            known = ", ".join(sorted(self._types)) or "none"
            raise UnknownJobType(f"unknown job type {name!r} (registered: {known})",
                                 type=name) from None

    def __contains__(self, name: str) -> bool:
        return name in self._types

    def __len__(self) -> int:
        return len(self._types)

    def names(self) -> list[str]:
        return sorted(self._types)


def as_replays(value: str | Sequence[str] | None) -> frozenset[str] | None:
    """``replays=``: ``"any"`` (every version: None), or the versions listed."""
    if value == "any":
        return None
    if value is None:
        return frozenset()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f'replays must be "any" or a list of versions, not {value!r}')
    return frozenset(value)


def stage(name: str | None = None, *, version: str | None = None) -> Callable[[JobFn], JobFn]:
    """Name a stage function explicitly (default: the function's ``__name__``), and give it a
    ``version``: a checkpoint written by another version is a change (``job/replay.py``)."""
    if version is not None and not isinstance(version, str):
        raise ConfigurationError(f"stage version must be a string, not {version!r}")

    def mark(fn: JobFn) -> JobFn:
        if name is not None:
            fn.__tether_stage__ = name  # type: ignore[attr-defined]
        fn.__tether_version__ = version  # type: ignore[attr-defined]
        return fn
    return mark


def as_stages(stages: Sequence[JobFn] | None) -> tuple[JobFn, ...]:
    out = tuple(stages or ())
    names = [JobType.stage_name(s) for s in out]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"stage names must be unique: {names}")
    return out
