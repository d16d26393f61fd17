"""Real worker processes for integration tests, and polling with a deadline (never a bare sleep).

``wait_started`` is how a test waits for a process it started (a server, a worker, a pooler)
to be ready: a generous deadline, because a loaded machine can take many seconds to import and
bind, but it stops at once when the process exits, and either failure carries the process's
own output, so a crash reads as a crash rather than as a slow start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import httpx

ROOT = Path(__file__).resolve().parent.parent
# A child process imports tether from this checkout, whatever the environment has installed.
CHILD_PYTHONPATH = os.pathsep.join((str(ROOT / "src"), str(ROOT)))
STARTUP_TIMEOUT = float(os.environ.get("TETHER_TEST_STARTUP_TIMEOUT", "120"))
"""Seconds a started process gets to become ready; only a process that never does waits it out."""


def free_port() -> int:
    """A port no one listens on now, for a server the test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
               interval: float = 0.05, what: str = "condition",
               watch: subprocess.Popen | Sequence[subprocess.Popen] = (),
               log: Path | None = None) -> object:
    """Poll ``predicate`` until it returns a truthy value, and return that value.

    Fails after ``timeout`` seconds, or as soon as a process in ``watch`` has exited; the
    failure ends with the tail of ``log`` (the processes' output), when given."""
    procs = [watch] if isinstance(watch, subprocess.Popen) else list(watch)
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        gone = [p for p in procs if p.poll() is not None]
        if gone:
            codes = ", ".join(f"pid {p.pid} with {p.returncode}" for p in gone)
            raise AssertionError(f"exited ({codes}) while waiting for {what}{_tail(log)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{_tail(log)}")
        time.sleep(interval)


def wait_started(predicate: Callable[[], object], proc: subprocess.Popen, *, what: str,
                 log: Path | None = None, timeout: float = STARTUP_TIMEOUT) -> object:
    """``wait_until`` for a process just started: ``STARTUP_TIMEOUT``, and an early failure,
    with its output, if it exits first."""
    return wait_until(predicate, timeout=timeout, interval=0.05, what=what, watch=proc, log=log)


def wait_http(url: str, proc: subprocess.Popen, *, log: Path | None = None,
              ready: Callable[[httpx.Response], bool] = lambda r: r.status_code == 200,
              timeout: float = STARTUP_TIMEOUT) -> None:
    """Wait until the server ``proc`` answers ``url`` with a response ``ready`` accepts. Each
    probe may take 10 s: a busy machine can be slow to answer, and that is not unreadiness."""
    def answers() -> bool:
        try:
            return ready(httpx.get(url, timeout=10))
        except httpx.HTTPError:
            return False
    wait_started(answers, proc, what=f"{url} to answer", log=log, timeout=timeout)


def _tail(log: Path | None, limit: int = 4000) -> str:
    if log is None:
        return ""
    try:
        text = log.read_bytes()[-limit:].decode(errors="replace")
    except OSError as exc:
        return f"\n(no output: {exc})"
    return f"\noutput of {log}:\n{text}"


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
