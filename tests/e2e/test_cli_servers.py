"""``tether serve`` and ``tether mcp`` start their servers against the database the CLI was given."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

from tether import Tether
from tests.e2e.api_harness import migrate_database
from tests.e2e.clitools import one_error_line, popen, tether
from tests.procs import free_port, stop, wait_http

pytestmark = pytest.mark.slow


def test_serve_answers_on_the_given_port_from_the_given_database(tmp_path):
    db = f"sqlite:///{tmp_path}/serve.db"
    app = Tether(db)
    job = app.submit("echo", {"via": "serve"})
    app.close()
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = popen("serve", "--port", str(port), "--insecure-no-auth", "--database-url", db,
                     db=None, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc, log=log)
        got = httpx.get(f"http://127.0.0.1:{port}/api/v1/jobs/{job.id}", timeout=5)
        assert got.status_code == 200 and got.json()["id"] == job.id
    finally:
        stop(proc)


def test_mcp_speaks_json_rpc_on_stdio(tmp_path):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "cli-test", "version": "1"}}}
    url = f"sqlite:///{tmp_path}/mcp.db"
    migrate_database(url)
    proc = popen("mcp", "--insecure-no-auth", db=url,
                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, _ = proc.communicate(json.dumps(init) + "\n", timeout=60)
    reply = json.loads(out.splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "tether"
    assert proc.returncode == 0


def test_mcp_rejects_an_unknown_transport(tmp_path):
    r = tether("mcp", "--transport", "carrier-pigeon", db=f"sqlite:///{tmp_path}/x.db")
    assert r.code == 2
    one_error_line(r, "usage_error")
