"""Running the real ``tether`` CLI in a subprocess for the CLI tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.procs import CHILD_PYTHONPATH

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.e2e.cli_jobs:app"


def cli_env(database_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TETHER_DATABASE_URL", "TETHER_APP", "FORCE_COLOR", "NO_COLOR")}
    env.update(PYTHONPATH=CHILD_PYTHONPATH, NO_COLOR="1", COLUMNS="200")
    if database_url:
        env["TETHER_DATABASE_URL"] = database_url
    env.update(extra)
    return env


class Result:
    def __init__(self, proc: subprocess.CompletedProcess) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"<exit {self.code}\nstdout: {self.out}\nstderr: {self.err}>"


def tether(*args: str, db: str | None, input: str | None = None, timeout: float = 60,
           env: dict[str, str] | None = None) -> Result:
    """``tether ARGS...`` with ``TETHER_DATABASE_URL=db``; returns exit code and both streams."""
    proc = subprocess.run([sys.executable, "-m", "tether.cli.main", *args], cwd=ROOT,
                          env=cli_env(db, **(env or {})), input=input, capture_output=True,
                          text=True, timeout=timeout)
    return Result(proc)


def popen(*args: str, db: str | None, env: dict[str, str] | None = None,
          **kwargs: Any) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tether.cli.main", *args], cwd=ROOT,
                            env=cli_env(db, **(env or {})), text=True, **kwargs)


def run_main(capsys, *args: str, db: str, input: str | None = None) -> Result:
    """``tether ARGS...`` in this process through ``tether.cli.main.main`` (for the many
    variants of a command whose subprocess run is covered elsewhere)."""
    import io

    from tether.cli.main import main

    capsys.readouterr()
    old_stdin, old_env = sys.stdin, dict(os.environ)
    if input is not None:
        sys.stdin = io.StringIO(input)
    try:
        code = main(["--database-url", db, *args])
    finally:
        sys.stdin = old_stdin
        os.environ.clear()
        os.environ.update(old_env)
    captured = capsys.readouterr()
    return Result(subprocess.CompletedProcess(args, code, captured.out, captured.err))


def one_error_line(result: Result, code: str) -> str:
    """Assert stderr is exactly one ``error: ... (code)`` line, without a traceback."""
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert "Traceback" not in result.err, result
    assert len(lines) == 1, result
    assert lines[0].startswith("error: ") and lines[0].endswith(f"({code})"), result
    return lines[0]
