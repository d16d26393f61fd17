"""Callback URLs over MCP (SDK client over stdio, both backends): ``tether_get_job`` shows a
waiting job's callbacks without their URLs, ``tether_make_callback`` makes one (its URL in
that answer only) that answers the job once with no token, ``tether_list_callbacks`` shows it
used; another project's job is job_not_found and a job not waiting for a signal
invalid_transition."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import anyio
import pytest

from tether import JobState, Tether
from tests.e2e.mcp_harness import code, data, stdio

S = JobState
PUBLIC = "https://tether.example.com"


@pytest.fixture
def local(database_url):
    app = Tether(database_url, public_url=PUBLIC)
    mailed = []

    @app.job("ask", queue="ask")
    def ask(ctx, payload):
        return ctx.wait_for_signal("approve", timeout=600, prompt="Approve?",
                                   callback=mailed.append)
    app.mailed = mailed
    yield app
    app.close()


def run_until(app: Tether, job_id: int, until: set) -> JobState:
    worker = app.worker(concurrency=1, queues=["ask"], poll_interval=0.05)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                              daemon=True)
    thread.start()
    try:
        return app.wait(job_id, timeout=60, until=until).state
    finally:
        worker.stop()
        thread.join()


def test_an_agent_makes_a_callback_url_that_answers_the_job_once(database_url, local):
    job = local.submit("ask", project="p1")
    other = local.submit("ask", project="p2")
    assert run_until(local, job.id, {S.WAITING}) == S.WAITING
    _, token = local.store.create_token(name="p1", projects=["p1"], admin=False)

    async def session():
        async with stdio(database_url, token, env={"TETHER_PUBLIC_URL": PUBLIC}) as client:
            seen = data(await client.call_tool("tether_get_job", {"job_id": job.id}))
            (own,) = seen["waiting_for"]["callbacks"]
            assert (own["issued_by"], own["state"]) == ("job", "unused") and "url" not in own
            made = data(await client.call_tool("tether_make_callback",
                                               {"job_id": job.id, "expires_in_s": 600}))
            assert made["url"].startswith(f"{PUBLIC}/callbacks/{job.id}/approve/tcb_")
            assert made["issued_by"].startswith("token:")
            refused = [code(await client.call_tool("tether_make_callback", {"job_id": other.id})),
                       code(await client.call_tool("tether_list_callbacks", {"job_id": other.id}))]
            assert refused == ["job_not_found", "job_not_found"]

            _, _, job_id, signal, raw = urlsplit(made["url"]).path.split("/")
            assert local.answer_callback(int(job_id), signal, raw, "yes").state == S.QUEUED
            assert run_until(local, job.id, {S.SUCCEEDED}) == S.SUCCEEDED
            listed = data(await client.call_tool("tether_list_callbacks", {"job_id": job.id}))
            late = code(await client.call_tool("tether_make_callback", {"job_id": job.id}))
            return listed, late

    listed, late = anyio.run(session)
    assert local.get(job.id).result == "yes"
    assert sorted(c["state"] for c in listed["items"]) == ["unused", "used"]
    assert all(c["url"] is None for c in listed["items"])
    assert late == "invalid_transition"
