"""Resuming a job paused by ``journal_mismatch`` with a decision, through every interface on
both backends: the real CLI (``tether job resume ID --on-change``), the REST API over real
HTTP (the resume route's body) and the MCP server over stdio (``tether_resume_job``'s
``on_change``). Each records the decision in the ``resume`` event; the replay that follows
obeys it; a decision for a job not paused by a mismatch is ``invalid_transition``."""

from __future__ import annotations

import anyio
import pytest

from tether import JobState
from tether.providers.simulated import read_bill
from tests.e2e.api_harness import run_server
from tests.e2e.clitools import tether
from tests.e2e.mcp_harness import code, data, stdio
from tests.replaying import PROMPT_B, Deploy, paused_job, run_next, waiting_job


@pytest.fixture
def deploy(database_url, tmp_path):
    opened = []
    yield Deploy(database_url, None, tmp_path / "bill.jsonl", opened)  # the system clock
    for app in opened:
        app.close()


def decided(app, job_id):
    resumes = [e for e in app.events(job_id) if e.kind == "resume"]
    return resumes[-1].data.get("on_change") if resumes else None


def test_the_cli_resumes_with_a_decision(deploy, database_url):
    job, app = paused_job(deploy)
    r = tether("job", "resume", str(job.id), "--on-change", "repay", "--json", db=database_url)
    assert r.code == 0, r
    assert r.json()["state"] == "queued" and decided(app, job.id) == "repay"
    assert run_next(app).state == JobState.SUCCEEDED
    assert len(read_bill(deploy.bill)) == 2

    other = waiting_job(deploy)
    r = tether("job", "resume", str(other.id), "--on-change", "reuse", db=database_url)
    assert r.code != 0 and "journal_mismatch" in r.out + r.err


def test_rest_resumes_with_a_decision(deploy, database_url, tmp_path):
    job, app = paused_job(deploy)
    plain, _ = paused_job(deploy, model="sim-large")
    _, admin = app.store.create_token(name="admin", projects=[], admin=True)
    with run_server(database_url, tmp_path) as srv, srv.client(admin) as client:
        bad = client.post(f"/api/v1/jobs/{job.id}/resume", json={"on_change": "pause"})
        assert bad.status_code == 422
        ok = client.post(f"/api/v1/jobs/{job.id}/resume", json={"on_change": "reuse"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["state"] == "queued"
        assert client.post(f"/api/v1/jobs/{plain.id}/resume").status_code == 200
        again = client.post(f"/api/v1/jobs/{plain.id}/resume", json={"on_change": "reuse"})
        assert again.status_code == 409 and again.json()["code"] == "invalid_transition"
    assert decided(app, job.id) == "reuse" and decided(app, plain.id) is None
    app = deploy(prompt=PROMPT_B)
    run_next(app)
    run_next(app)
    assert app.get(job.id).state == JobState.SUCCEEDED
    assert app.get(plain.id).error_code == "journal_mismatch", "no decision: paused again"


def test_mcp_resumes_with_a_decision(deploy, database_url):
    job, app = paused_job(deploy)

    async def session():
        async with stdio(database_url) as client:
            bad = await client.call_tool("tether_resume_job",
                                         {"job_id": job.id, "on_change": "maybe"})
            assert bad.is_error
            done = data(await client.call_tool("tether_resume_job",
                                               {"job_id": job.id, "on_change": "repay"}))
            assert done["state"] == "queued"
            again = await client.call_tool("tether_resume_job",
                                           {"job_id": job.id, "on_change": "repay"})
            assert code(again) == "invalid_transition"
    anyio.run(session)
    assert decided(app, job.id) == "repay"
    assert run_next(app).state == JobState.SUCCEEDED
    assert len(read_bill(deploy.bill)) == 2
