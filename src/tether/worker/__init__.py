"""Workers: claim jobs, run them under a heartbeat-renewed lease, report each outcome."""

from .worker import Worker

__all__ = ["Worker"]
