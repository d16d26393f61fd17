"""Answering a waiting job over MCP (SDK client over stdio, both backends): ``tether_get_job``
shows a waiting job's question, ``tether_list_jobs(waiting_for="signal")`` finds it,
``tether_signal_job`` answers it, ``tether_get_waits`` shows how the wait ended; with REST's
scoping and codes (another project's job is job_not_found, a finished one invalid_transition,
unknown arguments validation_error)."""

from __future__ import annotations

import threading

import anyio
import pytest

from tether import JobState, Tether
from tests.e2e.mcp_harness import code, data, stdio

S = JobState


@pytest.fixture
def local(database_url):
    app = Tether(database_url)

    @app.job("ask", queue="ask")
    def ask(ctx, payload):
        return ctx.wait_for_signal("approve", timeout=600, prompt="Approve plan for $42?",
                                   schema={"type": "boolean"})
    yield app
    app.close()


def run_until(app: Tether, job_id: int, until: set) -> JobState:
    """Run a worker here until the job reaches one of ``until``."""
    worker = app.worker(concurrency=1, queues=["ask"], poll_interval=0.05)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                              daemon=True)
    thread.start()
    try:
        return app.wait(job_id, timeout=60, until=until).state
    finally:
        worker.stop()
        thread.join()


def test_an_agent_reads_the_question_and_answers_it(database_url, local):
    job = local.submit("ask", project="p1")
    other = local.submit("ask", project="p2")
    assert run_until(local, job.id, {S.WAITING}) == S.WAITING
    assert run_until(local, other.id, {S.WAITING}) == S.WAITING
    _, token = local.store.create_token(name="p1", projects=["p1"], admin=False)

    async def session():
        async with stdio(database_url, token) as client:
            seen = data(await client.call_tool("tether_get_job", {"job_id": job.id}))
            w = seen["waiting_for"]
            assert seen["state"] == "waiting"
            assert (w["kind"], w["signal"], w["prompt"], w["schema"]) == (
                "signal", "approve", "Approve plan for $42?", {"type": "boolean"})
            listed = data(await client.call_tool("tether_list_jobs",
                                                 {"waiting_for": "signal"}))
            assert [j["id"] for j in listed["items"]] == [job.id]
            bad_kind = await client.call_tool("tether_list_jobs", {"waiting_for": "me"})
            assert code(bad_kind) == "validation_error"

            hidden = await client.call_tool("tether_signal_job", {
                "job_id": other.id, "name": "approve", "value": True})
            assert code(hidden) == "job_not_found"
            typo = await client.call_tool("tether_signal_job", {
                "job_id": job.id, "signal": "approve", "value": True})
            assert code(typo) == "validation_error"
            bad_name = await client.call_tool("tether_signal_job", {
                "job_id": job.id, "name": "bad\nname", "value": True})
            assert code(bad_name) == "invalid_argument"

            sent = data(await client.call_tool("tether_signal_job", {
                "job_id": job.id, "name": "approve", "value": True}))
            assert sent["state"] == "queued" and sent["waiting_for"] is None
            waits = data(await client.call_tool("tether_get_waits", {"job_id": job.id}))
            assert [(w["status"], w["outcome"], w["value"]) for w in waits["items"]] == [
                ("done", "received", True)]

    anyio.run(session)
    assert local.get(other.id).state == S.WAITING, "another project's job is untouched"
    assert run_until(local, job.id, {S.SUCCEEDED, S.FAILED}) == S.SUCCEEDED
    assert local.get(job.id).result is True

    async def finished():
        async with stdio(database_url, token) as client:
            late = await client.call_tool("tether_signal_job", {
                "job_id": job.id, "name": "approve"})
            assert code(late) == "invalid_transition"

    anyio.run(finished)
