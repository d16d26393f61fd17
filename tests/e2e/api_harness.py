"""A real API server in a subprocess (``python -m tether.api``) on a free 127.0.0.1 port."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.procs import CHILD_PYTHONPATH, free_port, stop, wait_http
from tests.conftest import PG_URL, require_postgres
from tests.pg import fresh_schema_url

ROOT = Path(__file__).resolve().parents[2]


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""``params=`` for a module-scoped fixture that runs one server per backend."""


def backend_url(backend: str, directory: Path) -> str:
    """A fresh database of ``backend``: a SQLite file in ``directory``, or a private schema."""
    if backend == "sqlite":
        return f"sqlite:///{directory}/tether.db"
    require_postgres()
    return fresh_schema_url(PG_URL, f"t_{uuid.uuid4().hex[:12]}")


def migrate_database(database_url: str) -> None:
    """What ``tether db migrate`` does, in this process."""
    from tether import Tether

    app = Tether(database_url)
    try:
        app.migrate()
    finally:
        app.close()


class Server:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path) -> None:
        self.url = url
        self.proc = proc
        self.log = log

    def client(self, token: str | None = None, **kw) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kw)


@contextmanager
def run_server(database_url: str, log_dir: Path, *, app_spec: str | None = None,
               run_worker: bool = False, insecure: bool = False,
               max_body_bytes: int | None = None, env: dict[str, str] | None = None,
               migrate: bool = True, port: int | None = None,
               log_level: str = "warning") -> Iterator[Server]:
    """``tether serve`` on ``database_url``, migrated first (as ``tether db migrate`` would:
    the server itself never creates a database) unless ``migrate`` is False."""
    if migrate:
        migrate_database(database_url)
    port = port or free_port()
    args = [sys.executable, "-m", "tether.api", "--port", str(port), "--database-url",
            database_url, "--log-level", log_level]
    if app_spec:
        args += ["--app", app_spec]
    if insecure:
        args.append("--insecure-no-auth")
    if max_body_bytes is not None:
        args += ["--max-body-bytes", str(max_body_bytes)]
    full_env = {**os.environ, "TETHER_RUN_WORKER": "true" if run_worker else "false",
                "PYTHONPATH": CHILD_PYTHONPATH, "TETHER_SIM_BILL": str(log_dir / "bill.jsonl"),
                **(env or {})}
    log = log_dir / f"api-{port}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(args, cwd=ROOT, env=full_env, stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, log=log)
        yield Server(url, proc, log)
    finally:
        stop(proc)
