"""Shared plumbing for the reliability tests: stores per backend, worker processes that are
restarted when they die (as a process supervisor would), the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

from tether import Tether
from tests.procs import CHILD_PYTHONPATH
from tests.procs import ROOT, start_worker, stop

APP = "tests.reliability.apps:app"


def url_for(backend: str, tmp_path: Path, name: str = "tether.db") -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/{name}"
    from tests.conftest import PG_URL
    from tests.pg import fresh_schema_url
    return fresh_schema_url(PG_URL, f"r_{uuid.uuid4().hex[:12]}")


def client(url: str, **options) -> Tether:
    """A Tether on ``url`` that knows the job types the workers run (so submit validates)."""
    from tests.reliability.apps import app as apps_app
    a = Tether(url, **options)
    a.registry = apps_app.registry
    return a


def worker(url: str, tmp_path: Path, name: str, *, env: dict[str, str] | None = None,
           **options):
    options.setdefault("app", APP)
    full_env = {"TETHER_LOG_LEVEL": "INFO", **(env or {})}
    return start_worker(url, env=full_env, log=tmp_path / f"{name}.log", **options)


class Supervisor:
    """Keeps ``n`` workers alive: a worker that died (a poison job, a SIGKILL) is replaced."""

    def __init__(self, url: str, tmp_path: Path, n: int, **options) -> None:
        self.url, self.tmp_path, self.options = url, tmp_path, options
        self.procs = [self._start(i) for i in range(n)]
        self.restarts = 0
        self.exit_codes: list[int] = []

    def _start(self, i: int):
        return worker(self.url, self.tmp_path, f"w{i}", **self.options)

    def tend(self) -> None:
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                self.exit_codes.append(p.returncode)
                self.procs[i] = self._start(i)
                self.restarts += 1

    def wait(self, predicate: Callable[[], object], *, timeout: float, what: str,
             interval: float = 0.1) -> object:
        deadline = time.monotonic() + timeout
        while True:
            self.tend()
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    def stop(self) -> list[int]:
        return [stop(p) for p in self.procs]


def cli(*args: str, db: str, timeout: float = 60,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``tether ARGS...`` in a subprocess, as a user runs it."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("TETHER_DATABASE_URL",
                                                                   "TETHER_APP")}
    full_env.update(PYTHONPATH=CHILD_PYTHONPATH, NO_COLOR="1", COLUMNS="200",
                    TETHER_DATABASE_URL=db, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tether.cli.main", *args], cwd=ROOT,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def read_log(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
