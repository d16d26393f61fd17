"""A job's type version and a version no live worker serves, as REST, /metrics and MCP show
them, both backends: a real worker process serving ``versioned`` at version 2
(``tests/apps/versions.py``), a real API server and the MCP server over stdio. A version-2 job
runs and shows its version; a version-1 job stays queued, marked unserved wherever it is
shown, and counted under its version in ``tether_jobs_unserved``. (The CLI and the dashboard:
``tests/e2e/test_cli_inprocess.py``, ``tests/e2e/test_dashboard_unserved.py``.)"""

from __future__ import annotations

import anyio
import pytest

from tether import JobState, Tether
from tests.e2e.api_harness import run_server
from tests.e2e.mcp_harness import data, stdio
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow


def submitted_at(url, version):
    submitter = Tether(url)
    try:
        submitter.register("versioned", lambda ctx, p: None, version=version)
        return submitter.submit("versioned", {})
    finally:
        submitter.close()


def test_rest_metrics_and_mcp_show_the_version_and_an_unserved_one(database_url, tmp_path):
    app = Tether(database_url)
    app.migrate()
    worker = start_worker(database_url, app="tests.apps.versions:app", concurrency=1,
                          env={"TETHER_TEST_VERSION": "2"}, log=tmp_path / "worker.log")
    try:
        wait_until(lambda: any((w.versions or {}).get("versioned") == ["2"]
                               for w in app.workers()), timeout=60, what="the worker",
                   watch=worker)
        new, old = submitted_at(database_url, "2"), submitted_at(database_url, "1")
        wait_until(lambda: app.get(new.id).state == JobState.SUCCEEDED, timeout=60,
                   what="the version-2 job to run", watch=worker)
        with run_server(database_url, tmp_path, insecure=True) as server, \
                server.client() as api:
            ran, stuck = (api.get(f"/api/v1/jobs/{j.id}").json() for j in (new, old))
            assert (ran["version"], ran["unserved"], ran["state"]) == ("2", False, "succeeded")
            assert (stuck["version"], stuck["unserved"], stuck["state"]) == ("1", True, "queued")
            page = api.get("/api/v1/jobs", params={"type": "versioned"}).json()["items"]
            assert {(j["id"], j["version"], j["unserved"]) for j in page} == {
                (new.id, "2", False), (old.id, "1", True)}
            series = [line for line in api.get("/metrics").text.splitlines()
                      if line.startswith("tether_jobs_unserved{")]
            assert series == ['tether_jobs_unserved{queue="default",type="versioned",'
                              'version="1"} 1.0'], series

        async def session():
            async with stdio(database_url) as client:
                return [data(await client.call_tool("tether_get_job", {"job_id": j.id}))
                        for j in (new, old)]
        ran, stuck = anyio.run(session)
        assert (ran["version"], ran["unserved"]) == ("2", False)
        assert (stuck["version"], stuck["unserved"]) == ("1", True)
    finally:
        stop(worker)
        app.close()
