"""tether: a durable job engine for long, expensive work such as LLM generation pipelines."""

from .app import Tether
from .clock import Clock, FakeClock
from .context import JobContext
from .core.budget import Budget
from .core.states import JobState
from .errors import (
    BudgetExhausted, ControlSignal, IdempotencyConflict, InvalidPayload, JobCancelled,
    JobNotFound, JobPaused, JobStateError, LeaseLost, PolicyBlock, ProviderError, TetherError,
    TransientError, UnknownJobType, WorkerShutdown,
)
from .records import Attempt, Event, Job
from .registry import stage

__version__ = "0.1.0"

__all__ = [
    "Attempt", "Budget", "BudgetExhausted", "Clock", "ControlSignal", "Event", "FakeClock",
    "IdempotencyConflict", "InvalidPayload", "Job", "JobCancelled", "JobContext", "JobNotFound",
    "JobPaused", "JobState", "JobStateError", "LeaseLost", "PolicyBlock", "ProviderError",
    "Tether", "TetherError", "TransientError", "UnknownJobType", "WorkerShutdown", "stage",
]
