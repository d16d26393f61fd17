"""Lease: the worker's hold on one claimed job, and the control signals of its attempt.

The lease is renewed by the worker's heartbeat (``worker/heartbeat.py``: one
``Store.heartbeat`` statement renews every lease a worker holds), which also delivers signals
to it (``signal``: cancel, pause, lease lost; the worker's drain adds shutdown) for the job to
stop at its next safe boundary. Every signal raised into the job's code is remembered
here too (``raise_signal``, ``remember``), so job code that catches one anyway cannot make the
executor believe the attempt ended normally.
"""

from __future__ import annotations

import threading
from typing import NoReturn

from ..errors import ControlSignal, LeaseLost


class Lease:
    """One claimed job: its id, its fencing attempt, and its stop signals."""

    def __init__(self, job_id: int, attempt: int) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self._signal: ControlSignal | None = None
        self._raised: ControlSignal | None = None
        self._lock = threading.Lock()

    def signal(self, sig: ControlSignal) -> None:
        """Ask the job to stop at its next safe boundary."""
        with self._lock:
            # A lost lease outranks everything: such a worker may write nothing at all.
            if self._signal is None or isinstance(sig, LeaseLost):
                self._signal = sig

    @property
    def pending(self) -> ControlSignal | None:
        """The signal the job has been asked to stop for, if any."""
        return self._signal

    @property
    def lost(self) -> bool:
        return isinstance(self._signal, LeaseLost)

    @property
    def raised(self) -> ControlSignal | None:
        """The signal raised into the job's code, whether or not the code let it through."""
        return self._raised

    def raise_signal(self, sig: ControlSignal) -> NoReturn:
        """Raise ``sig`` into the job's code and remember it."""
        self._raised = sig
        raise sig

    def remember(self, sig: ControlSignal) -> None:
        """Remember ``sig`` (raised by the store or a provider's classification) unless an
        earlier signal is remembered already; a lost lease is also a pending signal."""
        if isinstance(sig, LeaseLost):
            self.signal(sig)
        if self._raised is None:
            self._raised = sig
