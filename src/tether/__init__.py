"""tether: a durable job engine for long, expensive work such as LLM generation pipelines.

The public names are imported on first use (PEP 562), so ``import tether`` and the ``tether``
command stay fast: the facade pulls in the store and both backends, which a command such as
``tether --version`` never needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import Tether
    from .clock import Clock, FakeClock
    from .core.budget import Budget
    from .core.callbacks import Callback
    from .core.estimate import CallEstimate, CostEstimate
    from .core.states import JobState
    from .core.usage import Estimate, Metered, Usage
    from .core.waits import ChildFailure
    from .core.webhooks import Delivery, DeliveryAttempt, Subscription
    from .errors import (
        BudgetExhausted, ChildJobFailed, ControlSignal, IdempotencyConflict, InvalidPayload,
        JobCancelled, JobNotFound, JobPaused, JobStateError, JobWaiting, LeaseLost, PolicyBlock,
        ProviderError, SignalTimeout, TetherError, TransientError, UnknownJobType,
        WebhookNotFound, WebhookTargetRefused, WorkerShutdown,
    )
    from .facade.webhook_delivery import WebhookSettings
    from .job import JobContext
    from .records import Attempt, Checkpoint, Event, Job, JournalEntry, LedgerEntry, Wait
    from .registry import stage

__version__ = "0.1.0"

_MODULES: dict[str, tuple[str, ...]] = {
    ".app": ("Tether",),
    ".clock": ("Clock", "FakeClock"),
    ".core.budget": ("Budget",),
    ".core.callbacks": ("Callback",),
    ".core.estimate": ("CallEstimate", "CostEstimate"),
    ".core.states": ("JobState",),
    ".core.usage": ("Estimate", "Metered", "Usage"),
    ".core.waits": ("ChildFailure",),
    ".core.webhooks": ("Delivery", "DeliveryAttempt", "Subscription"),
    ".facade.webhook_delivery": ("WebhookSettings",),
    ".errors": (
        "BudgetExhausted", "ChildJobFailed", "ControlSignal", "IdempotencyConflict",
        "InvalidPayload", "JobCancelled", "JobNotFound", "JobPaused", "JobStateError",
        "JobWaiting", "LeaseLost", "PolicyBlock", "ProviderError", "SignalTimeout",
        "TetherError", "TransientError", "UnknownJobType", "WebhookNotFound",
        "WebhookTargetRefused", "WorkerShutdown"),
    ".job": ("JobContext",),
    ".records": ("Attempt", "Checkpoint", "Event", "Job", "JournalEntry", "LedgerEntry", "Wait"),
    ".registry": ("stage",),
}
_HOMES = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "Attempt", "Budget", "BudgetExhausted", "CallEstimate", "Callback", "Checkpoint",
    "ChildFailure", "ChildJobFailed", "Clock", "ControlSignal", "CostEstimate", "Delivery",
    "DeliveryAttempt", "Estimate", "Event", "FakeClock", "IdempotencyConflict", "InvalidPayload",
    "Job", "JobCancelled", "JobContext", "JobNotFound", "JobPaused", "JobState", "JobStateError",
    "JobWaiting", "JournalEntry", "LeaseLost", "LedgerEntry", "Metered", "PolicyBlock",
    "ProviderError", "SignalTimeout", "Subscription", "Tether", "TetherError", "TransientError",
    "UnknownJobType", "Usage", "Wait", "WebhookNotFound", "WebhookSettings",
    "WebhookTargetRefused", "WorkerShutdown", "stage",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
