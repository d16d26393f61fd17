"""What an agent needs to unstick a job over MCP (SDK client over stdio, both backends): raise
a budget to clear a budget pause, retry a failed job, requeue an interrupted one; read its
attempts, ledger and checkpoints; and the same scoping as REST (a project token neither sees
nor acts on another project's job, and may not touch queues or workers)."""

from __future__ import annotations

import time
from decimal import Decimal

import anyio
import pytest

from tether import JobState, Tether
from tests.e2e.mcp_harness import (
    code, data, interrupt, register, run_until_stopped, stdio,
)

S = JobState
TINY = "0.0000000001"


@pytest.fixture
def local(database_url):
    app = Tether(database_url)
    register(app)
    yield app
    app.close()


def test_a_budget_raise_clears_a_budget_pause_and_the_job_finishes(database_url, local):
    job = local.submit("metered", {"n": 1}, budget={"max_cost_usd": TINY})
    assert run_until_stopped(local, job.id, "metered") == S.PAUSED
    assert local.get(job.id).error_code == "budget_exhausted"

    async def session():
        async with stdio(database_url) as client:
            held = data(await client.call_tool("tether_set_job_budget", {
                "job_id": job.id, "budget": {"max_calls": 10}, "resume": False}))
            assert held["state"] == "paused" and held["budget"]["limits"]["max_calls"] == 10
            assert Decimal(held["budget"]["limits"]["max_cost_usd"]) == Decimal(TINY)
            wrong = await client.call_tool("tether_set_job_budget", {
                "job_id": job.id, "budget": {"max_calls": 10}, "resume": "false"})
            assert code(wrong) == "validation_error", "a flag is a boolean, not a string"
            raised = data(await client.call_tool("tether_set_job_budget", {
                "job_id": job.id, "budget": {"max_cost_usd": "1.5"}}))
            assert raised["state"] == "queued"
            assert raised["budget"]["limits"]["max_cost_usd"] == "1.5"
            assert raised["budget"]["limits"]["max_calls"] == 10

            state = await anyio.to_thread.run_sync(run_until_stopped, local, job.id,
                                                   "metered")
            assert state == S.SUCCEEDED
            done = data(await client.call_tool("tether_get_job", {"job_id": job.id}))
            assert done["result"] == {"ok": True}
            attempts = data(await client.call_tool("tether_get_attempts", {"job_id": job.id}))
            assert [a["attempt"] for a in attempts["items"]] == [1, 2]
            assert attempts["items"][0]["error_code"] == "budget_exhausted"
            ledger = data(await client.call_tool("tether_get_ledger", {"job_id": job.id}))
            assert [(r["key"], r["confirmed"]) for r in ledger["items"]] == [("only", True)]
            assert ledger["items"][0]["cost_usd"] == done["actual_cost_usd"]
            checkpoints = data(await client.call_tool("tether_get_checkpoints",
                                                      {"job_id": job.id}))
            assert [c["stage"] for c in checkpoints["items"]] == ["prepare"]
            events = data(await client.call_tool("tether_get_events", {"job_id": job.id}))
            assert "budget_exhausted" in [e["kind"] for e in events["items"]]

    anyio.run(session)


def test_retry_a_failed_job_and_requeue_an_interrupted_one(database_url, local):
    failed = local.submit("refuse", {})
    assert run_until_stopped(local, failed.id, "refuse") == S.FAILED
    fragile = local.submit("fragile", {"keep": 1})
    interrupt(local, fragile.id, "fragile", now=time.time() + 60)
    assert local.get(fragile.id).state == S.INTERRUPTED

    async def session():
        async with stdio(database_url) as client:
            retried = data(await client.call_tool("tether_retry_job", {"job_id": failed.id}))
            assert retried["state"] == "queued"
            again = await client.call_tool("tether_retry_job", {"job_id": failed.id})
            assert code(again) == "invalid_transition"

            not_failed = await client.call_tool("tether_retry_job", {"job_id": fragile.id})
            assert code(not_failed) == "invalid_transition"
            requeued = data(await client.call_tool("tether_requeue_job",
                                                   {"job_id": fragile.id}))
            assert requeued["state"] == "queued"
            twice = await client.call_tool("tether_requeue_job", {"job_id": fragile.id})
            assert code(twice) == "invalid_transition"

    anyio.run(session)
    assert run_until_stopped(local, fragile.id, "fragile") == S.SUCCEEDED
    assert local.get(fragile.id).result == {"keep": 1}
    assert [a.attempt for a in local.attempts(failed.id)] == [1]


def test_a_project_token_sees_and_touches_only_its_projects(database_url, local):
    _, token = local.store.create_token(name="agent", projects=["mine"], admin=False)
    other = local.submit("metered", {"n": 2}, project="theirs",
                         budget={"max_cost_usd": TINY})
    assert run_until_stopped(local, other.id, "metered") == S.PAUSED

    async def session():
        async with stdio(database_url, token) as client:
            for tool in ("tether_get_job", "tether_get_events", "tether_get_attempts",
                         "tether_get_ledger", "tether_get_checkpoints", "tether_cancel_job",
                         "tether_pause_job", "tether_resume_job", "tether_retry_job",
                         "tether_requeue_job"):
                assert code(await client.call_tool(tool, {"job_id": other.id})) == \
                    "job_not_found", tool
            raise_other = await client.call_tool("tether_set_job_budget", {
                "job_id": other.id, "budget": {"max_cost_usd": "100"}})
            assert code(raise_other) == "job_not_found"
            for tool, arguments in (("tether_list_queues", {}), ("tether_list_workers", {}),
                                    ("tether_pause_queue", {"name": "metered"}),
                                    ("tether_resume_queue", {"name": "metered"})):
                assert code(await client.call_tool(tool, arguments)) == "forbidden", tool
            listing = await client.call_tool("tether_list_jobs", {"project": "theirs"})
            assert code(listing) == "forbidden"
            elsewhere = await client.call_tool("tether_submit_job", {
                "type": "metered", "project": "theirs"})
            assert code(elsewhere) == "forbidden"
            search = data(await client.call_tool("tether_list_jobs", {"search": str(other.id)}))
            assert search["items"] == []
            mine = data(await client.call_tool("tether_submit_job", {"type": "metered"}))
            assert mine["job"]["project"] == "mine"

    anyio.run(session)
    job = local.get(other.id)
    assert job.state == S.PAUSED and job.budget.limits.max_cost_usd == Decimal(TINY)
    assert not any(q.paused for q in local.queues())


def test_an_admin_lists_pauses_and_resumes_queues_and_lists_workers(database_url, local):
    _, token = local.store.create_token(name="ops", projects=[], admin=True)
    job = local.submit("refuse", {})
    assert run_until_stopped(local, job.id, "refuse") == S.FAILED
    local.submit("metered", {})

    async def session():
        async with stdio(database_url, token) as client:
            queues = data(await client.call_tool("tether_list_queues", {}))["items"]
            by_name = {q["name"]: q for q in queues}
            assert by_name["refuse"]["counts"] == {"failed": 1}
            assert by_name["metered"]["counts"] == {"queued": 1}
            paused = data(await client.call_tool("tether_pause_queue", {"name": "metered"}))
            assert paused == {"name": "metered", "paused": True, "counts": {"queued": 1}}
            resumed = data(await client.call_tool("tether_resume_queue", {"name": "metered"}))
            assert resumed["paused"] is False
            workers = data(await client.call_tool("tether_list_workers", {}))["items"]
            assert all(w["stopped_at"] is None for w in workers)

    anyio.run(session)
    assert not any(q.paused for q in local.queues())
