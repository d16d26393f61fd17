"""tether: a durable job engine for long, expensive work such as LLM generation pipelines."""

from .app import Tether
from .clock import Clock, FakeClock
from .job import JobContext
from .core.budget import Budget
from .core.estimate import CallEstimate, CostEstimate
from .core.usage import Estimate, Metered, Usage
from .core.states import JobState
from .core.waits import ChildFailure
from .errors import (
    BudgetExhausted, ChildJobFailed, ControlSignal, IdempotencyConflict, InvalidPayload,
    JobCancelled, JobNotFound, JobPaused, JobStateError, JobWaiting, LeaseLost, PolicyBlock,
    ProviderError, SignalTimeout, TetherError, TransientError, UnknownJobType, WorkerShutdown,
)
from .records import Attempt, Checkpoint, Event, Job, JournalEntry, LedgerEntry, Wait
from .registry import stage

__version__ = "0.1.0"

__all__ = [
    "Attempt", "Budget", "BudgetExhausted", "CallEstimate", "Checkpoint", "ChildFailure",
    "ChildJobFailed", "Clock", "ControlSignal", "CostEstimate", "Estimate", "Event", "FakeClock",
    "IdempotencyConflict", "InvalidPayload", "Job", "JobCancelled", "JobContext", "JobNotFound",
    "JobPaused", "JobState", "JobStateError", "JobWaiting", "JournalEntry", "LeaseLost",
    "LedgerEntry", "Metered", "PolicyBlock", "ProviderError", "SignalTimeout", "Tether",
    "TetherError", "TransientError", "UnknownJobType", "Usage", "Wait", "WorkerShutdown",
    "stage",
]
