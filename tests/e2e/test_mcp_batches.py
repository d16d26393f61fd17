"""A job's provider batches over MCP (SDK client over stdio, both backends):
``tether_get_batches`` answers what REST's ``GET /api/v1/jobs/{id}/batches`` does, waiting and
settled, with REST's scoping; ``tether_get_job`` shows the batch a job waits on and
``tether_list_jobs(waiting_for="provider_batch")`` finds it. The job is driven in this process
with the simulated provider's batch mode (tests/contract/test_batches.py)."""

from __future__ import annotations

import anyio

from tether.worker.batch_poller import BatchPoller
from tether.wire.signals import BatchOut
from tests.contract.test_batches import Counting, _job
from tests.contract.test_waits import run_next
from tests.e2e.mcp_harness import code, data, stdio


def rest_shape(app, job_id):
    return [BatchOut(**b.to_dict()).model_dump(mode="json") for b in app.batches(job_id)]


def test_an_agent_sees_a_jobs_batches_waiting_and_settled(app, clock, tmp_path, database_url):
    app.add_batch_provider(Counting(tmp_path / "batches", complete_after_s=3600, now=clock.time))
    _job(app)
    job = app.submit("gen", project="p1")
    other = app.submit("gen", project="p2")
    run_next(app)
    run_next(app)
    _, token = app.store.create_token(name="p1", projects=["p1"], admin=False)

    async def read(settled: bool):
        async with stdio(database_url, token) as client:
            got = data(await client.call_tool("tether_get_batches", {"job_id": job.id}))
            assert got["items"] == rest_shape(app, job.id)
            (b,) = got["items"]
            assert b["remote_id"] and b["items_total"] == 3
            if settled:
                assert b["items_done"] == 3 and b["settled_usd"] and b["standard_usd"]
                return
            assert b["status"] == "submitted" and b["settled_usd"] is None
            seen = data(await client.call_tool("tether_get_job", {"job_id": job.id}))
            w = seen["waiting_for"]
            assert w["kind"] == "provider_batch" and w["batch"]["remote_id"] == b["remote_id"]
            listed = data(await client.call_tool("tether_list_jobs",
                                                 {"waiting_for": "provider_batch"}))
            assert [j["id"] for j in listed["items"]] == [job.id]
            hidden = await client.call_tool("tether_get_batches", {"job_id": other.id})
            assert code(hidden) == "job_not_found"

    anyio.run(read, False)
    clock.advance(3600)
    assert BatchPoller(app.store, app, interval=1).run_once() == 2
    run_next(app)
    anyio.run(read, True)
