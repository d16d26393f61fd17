"""MCP over streamable HTTP: every request needs a bearer token, and each tool call is scoped
by the token of the request that carried it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tether import Tether
from tests.procs import CHILD_PYTHONPATH, free_port, stop, wait_http

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mcp_http(tmp_path_factory):
    d = tmp_path_factory.mktemp("mcp-http")
    url = f"sqlite:///{d}/mcp.db"
    local = Tether(url)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    _, p2 = local.store.create_token(name="p2", projects=["p2"], admin=False)
    port = free_port()
    log = d / "mcp.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether.mcp", "--transport", "http", "--port", str(port),
             "--database-url", url],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": CHILD_PYTHONPATH}, stdout=fh,
            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/mcp", proc, log=log, ready=lambda response: True)
        yield base, local, p1, p2
    finally:
        stop(proc)
        local.close()


def client_for(base: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(30, read=120))
    return Client(streamable_http_client(f"{base}/mcp", http_client=http),
                  read_timeout_seconds=30)


def data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content or json.loads(result.content[0].text)


@pytest.mark.parametrize("header", [None, "Bearer tth_unknown"])
def test_requests_without_a_live_token_are_401(mcp_http, header):
    base = mcp_http[0]
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if header:
        headers["Authorization"] = header
    r = httpx.post(f"{base}/mcp", headers=headers,
                   json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "unauthorized"


def test_each_call_is_scoped_by_its_own_token(mcp_http):
    base, local, p1, p2 = mcp_http

    async def scenario():
        async with client_for(base, p1) as c1:
            sub = data(await c1.call_tool("tether_submit_job", {"type": "anything",
                                                                "payload": [1, 2]}))
            job = sub["job"]
            assert job["project"] == "p1"
            assert data(await c1.call_tool("tether_get_job", {"job_id": job["id"]}))["id"] == \
                job["id"]
        async with client_for(base, p2) as c2:
            hidden = await c2.call_tool("tether_get_job", {"job_id": job["id"]})
            assert hidden.is_error and "job_not_found" in hidden.content[0].text
            cancel = await c2.call_tool("tether_cancel_job", {"job_id": job["id"]})
            assert cancel.is_error and "job_not_found" in cancel.content[0].text
            assert data(await c2.call_tool("tether_list_jobs", {}))["items"] == []
        return job["id"]

    job_id = anyio.run(scenario)
    assert local.get(job_id).state == "queued" and local.get(job_id).project == "p1"


def test_over_http_unknown_arguments_and_big_ids_are_refused_with_codes(mcp_http):
    base, local, p1, _ = mcp_http
    before = len(local.list(project="p1"))

    async def scenario():
        async with client_for(base, p1) as c1:
            tools = (await c1.list_tools()).tools
            assert all(t.input_schema["additionalProperties"] is False for t in tools)
            for _ in range(2):
                typo = await c1.call_tool("tether_submit_job", {
                    "type": "anything", "idempotencyKey": "http-1"})
                assert typo.is_error
                assert typo.content[0].text.startswith("validation_error: unknown argument")
                assert typo.structured_content["code"] == "validation_error"
            big = await c1.call_tool("tether_get_events", {"job_id": 1, "after": 2**63})
            assert big.is_error and big.structured_content["code"] == "validation_error"
            queues = await c1.call_tool("tether_pause_queue", {"name": "default"})
            assert queues.is_error and queues.content[0].text.startswith("forbidden: ")

    anyio.run(scenario)
    assert len(local.list(project="p1")) == before, "a call with a typo created no job"
    assert not any(q.paused for q in local.queues())
