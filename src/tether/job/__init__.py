"""The running job: its context, lease, calls, stages, and the store methods it may use."""

from .context import JobContext
from .host import JobHost
from .lease import Lease
from .store import JobStore

__all__ = ["JobContext", "JobHost", "JobStore", "Lease"]
