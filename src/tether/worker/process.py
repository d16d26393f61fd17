"""Settings of a process that exists to run a worker (``tether worker``, ``python -m
tether.worker``); a ``Worker`` embedded in someone else's process leaves them alone.

A worker's job threads mostly wait (on providers, on the database) and then run a little
Python. A thread coming back from the database needs the GIL, and with CPython's default
switch interval it can wait up to 5 ms for a thread that is busy computing: a write passes
through several such returns, and a job's calls queue behind them. A 1 ms interval bounds
that wait, for a few more thread switches a second.
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.001


def tune() -> None:
    """Apply the worker process's settings (see the module's docstring)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
