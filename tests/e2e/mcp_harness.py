"""The MCP server in a subprocess over stdio, driven by the SDK's own ``Client``; and the
job types the MCP tests run in the test process (a budget pause, a failure, an interrupt)."""

from __future__ import annotations

import json
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tether import Estimate, JobState, Metered, PolicyBlock, Tether, Usage
from tether.core.states import TERMINAL
from tests.e2e.api_harness import migrate_database
from tests.procs import CHILD_PYTHONPATH, STARTUP_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]


def params(database_url: str, *args: str,
           env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.mcp", "--database-url", database_url, *args],
        cwd=str(ROOT), env={"PYTHONPATH": CHILD_PYTHONPATH, "TETHER_RUN_WORKER": "false",
                            **(env or {})})


@asynccontextmanager
async def stdio(database_url: str, token: str | None = None, *,
                env: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """A client session with a fresh server acting as ``token`` (unrestricted without one),
    on ``database_url`` migrated first (the MCP server never creates a database). A reply may
    take ``STARTUP_TIMEOUT``: the first waits for the server to start."""
    migrate_database(database_url)
    auth = ["--token", token] if token else ["--insecure-no-auth"]
    async with Client(params(database_url, *auth, env=env),
                      read_timeout_seconds=STARTUP_TIMEOUT) as client:
        yield client


def data(result) -> dict:
    """The structured content of a successful call."""
    assert not result.is_error, result.content[0].text
    return result.structured_content or json.loads(result.content[0].text)


def failure(result) -> tuple[str, dict]:
    """(text, problem) of a failed call; the text starts with the problem's code."""
    assert result.is_error, result
    text = result.content[0].text
    problem = result.structured_content
    assert problem is not None and text.startswith(f"{problem['code']}: "), text
    return text, problem


def code(result) -> str:
    return failure(result)[1]["code"]


def register(app: Tether) -> None:
    """Job types that end paused (budget), failed (policy) and interrupted (not safe)."""

    @app.job("metered", queue="metered")
    def metered(ctx, payload):
        ctx.stage("prepare", lambda: payload)
        return ctx.call(key="only", provider="simulated", model="sim-small",
                        estimate=Estimate(input_tokens=10, max_output_tokens=5),
                        fn=lambda: Metered({"ok": True}, Usage(10, 5)))

    @app.job("refuse", queue="refuse", max_attempts=1)
    def refuse(ctx, payload):
        raise PolicyBlock("refused by policy")

    @app.job("fragile", queue="fragile", safe_to_retry=False)
    def fragile(ctx, payload):
        return payload


def run_until_stopped(app: Tether, job_id: int, queue: str) -> JobState:
    """Run a worker here until the job is terminal, paused or interrupted."""
    worker = app.worker(concurrency=1, queues=[queue], poll_interval=0.05)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                              daemon=True)
    thread.start()
    try:
        until = TERMINAL | {JobState.PAUSED, JobState.INTERRUPTED}
        return app.wait(job_id, timeout=60, until=until).state
    finally:
        worker.stop()
        thread.join()


def interrupt(app: Tether, job_id: int, queue: str, now: float) -> None:
    """Claim and start the job as a worker that then vanishes; expire its lease at ``now``."""
    (claim,) = app.store.claim("w-lost", queues=[queue], limit=1, lease_ttl=30)
    assert claim.job.id == job_id
    app.store.start(job_id, claim.attempt)
    assert dict(app.store.expire_leases(now=now)) == {job_id: JobState.INTERRUPTED}
