"""The MCP server driven by the SDK's own client over stdio (``python -m tether.mcp``)."""

from __future__ import annotations

import json
import os
import sys
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tether import Tether
from tether.errors import ConfigurationError
from tether.mcp.server import stdio_principal
from tests.procs import CHILD_PYTHONPATH, STARTUP_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.e2e.api_app:app"


def params(database_url: str, *args: str, env: dict[str, str] | None = None):
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.mcp", "--database-url", database_url, *args],
        cwd=str(ROOT),
        env={"PYTHONPATH": CHILD_PYTHONPATH, "TETHER_RUN_WORKER": "false", **(env or {})})


def data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content or json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error
    return result.content[0].text


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path}/mcp.db"
    local = Tether(url)
    local.migrate()  # the MCP server opens an existing database only
    yield url, local
    local.close()


def test_submit_get_list_events_cancel_over_stdio(db):
    url, local = db
    _, token = local.store.create_token(name="agent", projects=["agents"], admin=False)
    other = local.submit("steps", {"steps": 1}, project="elsewhere")

    async def session():
        async with Client(params(url, "--app", APP, "--token", token),
                          read_timeout_seconds=STARTUP_TIMEOUT) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"tether_submit_job", "tether_get_job", "tether_list_jobs",
                    "tether_get_events", "tether_cancel_job", "tether_pause_job",
                    "tether_resume_job"} <= names, "the first tools keep their names"

            sub = data(await client.call_tool("tether_submit_job", {
                "type": "steps", "payload": {"steps": 5}, "idempotency_key": "mcp-1",
                "budget": {"max_cost_usd": "0.50"}}))
            assert sub["created"] is True
            job = sub["job"]
            assert job["project"] == "agents" and job["state"] == "queued"
            assert Decimal(job["budget"]["limits"]["max_cost_usd"]) == Decimal("0.50")
            again = data(await client.call_tool("tether_submit_job", {
                "type": "steps", "payload": {"steps": 5}, "idempotency_key": "mcp-1",
                "budget": {"max_cost_usd": "0.50"}}))
            assert again["created"] is False and again["job"]["id"] == job["id"]
            clash = await client.call_tool("tether_submit_job", {
                "type": "steps", "payload": {"steps": 6}, "idempotency_key": "mcp-1"})
            assert "idempotency_conflict" in error_text(clash)
            reprioritised = await client.call_tool("tether_submit_job", {
                "type": "steps", "payload": {"steps": 5}, "idempotency_key": "mcp-1",
                "budget": {"max_cost_usd": "0.50"}, "priority": 9})
            assert "idempotency_conflict" in error_text(reprioritised)
            unknown = await client.call_tool("tether_submit_job", {"type": "nope"})
            assert "unknown_job_type" in error_text(unknown)

            got = data(await client.call_tool("tether_get_job", {"job_id": job["id"]}))
            assert got["id"] == job["id"] and got["type"] == "steps"

            listed = data(await client.call_tool("tether_list_jobs", {"limit": 10}))
            assert [j["id"] for j in listed["items"]] == [job["id"]]
            assert listed["next_cursor"] is None

            cancelled = data(await client.call_tool("tether_cancel_job",
                                                    {"job_id": job["id"], "reason": "agent"}))
            assert cancelled["state"] == "cancelled"
            twice = await client.call_tool("tether_cancel_job", {"job_id": job["id"]})
            assert "invalid_transition" in error_text(twice)

            events = data(await client.call_tool("tether_get_events", {"job_id": job["id"]}))
            kinds = [e["kind"] for e in events["items"]]
            assert kinds[0] == "submitted" and kinds[-1] == "cancel"
            assert [e["seq"] for e in events["items"]] == list(range(1, len(kinds) + 1))
            tail = data(await client.call_tool("tether_get_events",
                                               {"job_id": job["id"], "after": 1}))
            assert [e["seq"] for e in tail["items"]] == list(range(2, len(kinds) + 1))

            for tool in ("tether_get_job", "tether_get_events", "tether_cancel_job",
                         "tether_pause_job", "tether_resume_job"):
                hidden = await client.call_tool(tool, {"job_id": other.id})
                assert "job_not_found" in error_text(hidden), tool
            forbidden = await client.call_tool("tether_list_jobs", {"project": "elsewhere"})
            assert "forbidden" in error_text(forbidden)

    anyio.run(session)
    assert local.get(other.id).state == "queued"
    assert local.list(project="agents")[0].state == "cancelled"


def test_pause_and_resume_over_stdio_unrestricted(db):
    url, local = db
    job = local.submit("steps", {"steps": 1}, project="anything")

    async def session():
        async with Client(params(url, "--insecure-no-auth"),
                          read_timeout_seconds=STARTUP_TIMEOUT) as client:
            paused = data(await client.call_tool("tether_pause_job", {"job_id": job.id}))
            assert paused["state"] == "paused"
            resumed = data(await client.call_tool("tether_resume_job", {"job_id": job.id}))
            assert resumed["state"] == "queued"
            listed = data(await client.call_tool("tether_list_jobs", {"state": "queued"}))
            assert job.id in [j["id"] for j in listed["items"]]

    anyio.run(session)


def test_a_running_stdio_session_loses_its_rights_when_its_token_is_revoked(db):
    url, local = db
    info, token = local.store.create_token(name="agent", projects=["agents"], admin=False)
    mine = local.submit("steps", {"steps": 1}, project="agents")

    async def session():
        async with Client(params(url, "--token", token), read_timeout_seconds=30) as client:
            before = await client.call_tool("tether_get_job", {"job_id": mine.id})
            local.store.revoke_token(info.id)
            after = [await client.call_tool("tether_get_job", {"job_id": mine.id}),
                     await client.call_tool("tether_list_jobs", {}),
                     await client.call_tool("tether_cancel_job", {"job_id": mine.id})]
            return before, after

    before, after = anyio.run(session)
    assert data(before)["id"] == mine.id
    for result in after:  # the next call after the revocation, as REST's next request
        assert error_text(result).startswith("unauthorized: this session's token was revoked")
        assert result.structured_content["status"] == 401
    assert local.get(mine.id).state == "queued"  # the cancel was not made


def test_stdio_refuses_to_start_without_a_token_or_with_a_bad_one(db):
    url, local = db
    import subprocess
    env = {**os.environ, "PYTHONPATH": CHILD_PYTHONPATH}
    env.pop("TETHER_MCP_TOKEN", None)
    proc = subprocess.run([sys.executable, "-m", "tether.mcp", "--database-url", url],
                          cwd=ROOT, env=env, input=b"", capture_output=True, timeout=60)
    assert proc.returncode == 2
    assert b"needs a token" in proc.stderr and b"configuration_error" in proc.stderr
    info, token = local.store.create_token(name="gone", projects=["p"], admin=False)
    local.store.revoke_token(info.id)
    for bad in ("tth_bogus", token):
        with pytest.raises(ConfigurationError, match="unknown or revoked"):
            stdio_principal(local, bad, insecure_no_auth=True)
