"""Real worker processes for integration tests, and polling with a deadline (never a bare sleep)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
# A child process imports tether from this checkout, whatever the environment has installed.
CHILD_PYTHONPATH = os.pathsep.join((str(ROOT / "src"), str(ROOT)))


def start_worker(database_url: str, *, app: str = "tests.apps.basic:app", concurrency: int = 4,
                 lease_ttl: float = 30.0, poll: float = 0.05, queues: str | None = None,
                 env: dict[str, str] | None = None, log: Path | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "tether.worker", "--app", app, "--database-url", database_url,
           "--concurrency", str(concurrency), "--lease-ttl", str(lease_ttl),
           "--poll-interval", str(poll)]
    if queues:
        cmd += ["--queues", queues]
    full_env = {**os.environ, "PYTHONPATH": CHILD_PYTHONPATH, "PYTHONFAULTHANDLER": "1", **(env or {})}
    out = open(log, "ab") if log else subprocess.DEVNULL
    return subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=out, stderr=out)


def wait_until(predicate: Callable[[], object], *, timeout: float = 30.0,
               interval: float = 0.05, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def stop(proc: subprocess.Popen, *, timeout: float = 15.0) -> int:
    """SIGTERM, then the exit code. A process still running after ``timeout`` gets SIGABRT
    first, so faulthandler (``PYTHONFAULTHANDLER``) writes every thread's stack to its log —
    a hung shutdown leaves evidence — and SIGKILL only if even that does not end it."""
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
    try:
        return proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)
