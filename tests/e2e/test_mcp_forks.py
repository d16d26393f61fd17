"""``tether_fork_job`` and ``tether_retry_job`` with ``from_stage`` through the SDK's client
over stdio, on both backends: strict arguments, stable codes, project scoping, and a fork that
runs without making its reused calls again."""

from __future__ import annotations

from collections import Counter

import anyio
import pytest

from tether import JobState, Tether
from tests.contract.test_context import claim_and_run
from tests.contract.test_forks import five_stages
from tests.e2e.mcp_harness import code, data, stdio


@pytest.fixture
def local(database_url):
    app = Tether(database_url)
    yield app
    app.close()


def test_fork_and_retry_from_a_stage_over_mcp(database_url, local):
    made, fail = [], {"export": True}
    five_stages(local, made, fail)
    src = local.submit("five", {"topic": "t", "prompt": "p"}, project="mine")
    assert claim_and_run(local).state == JobState.FAILED
    _, token = local.store.create_token(name="agent", projects=["mine"], admin=False)
    _, stranger = local.store.create_token(name="other", projects=["theirs"], admin=False)

    async def session():
        async with stdio(database_url, token) as client:
            args = {"job_id": src.id, "from_stage": "validate", "idempotency_key": "f-1",
                    "payload": {"topic": "t", "prompt": "q"}, "budget": {"max_calls": 20}}
            fork = data(await client.call_tool("tether_fork_job", args))
            assert fork["state"] == "queued" and fork["project"] == "mine"
            repeat = data(await client.call_tool("tether_fork_job", args))  # a retried call
            assert repeat["id"] == fork["id"]
            conflict = await client.call_tool("tether_fork_job", {**args, "from_stage": "review"})
            assert code(conflict) == "idempotency_conflict"
            assert fork["budget"]["limits"]["max_calls"] == 20
            unknown = await client.call_tool("tether_fork_job",
                                             {"job_id": src.id, "from_stage": "nope"})
            assert code(unknown) == "invalid_argument"
            extra = await client.call_tool("tether_fork_job", {
                "job_id": src.id, "from_stage": "draft", "project": "x"})
            assert code(extra) == "validation_error"
            retried = data(await client.call_tool("tether_retry_job", {
                "job_id": src.id, "from_stage": "review"}))
            assert retried["state"] == "queued"
            return fork["id"]

    fork_id = anyio.run(session)
    fail.clear()
    assert {claim_and_run(local).id, claim_and_run(local).id} == {src.id, fork_id}
    assert sorted(k for j, k in made if j == fork_id) == [
        "export-0", "export-1", "review-0", "review-1", "validate-0", "validate-1"]
    again = Counter(k for j, k in made if j == src.id)
    assert again["draft-0"] == again["validate-0"] == 1 and again["review-0"] == 2
    assert local.get(src.id).state == JobState.SUCCEEDED

    async def reads():
        async with stdio(database_url, token) as client:
            ledger = data(await client.call_tool("tether_get_ledger", {"job_id": fork_id}))
            reused = [r for r in ledger["items"] if r["reused_from"] is not None]
            assert len(reused) == 4 and {r["reused_from"] for r in reused} == {src.id}
            assert {r["cost_usd"] for r in reused} == {"0"}
        async with stdio(database_url, stranger) as client:
            hidden = await client.call_tool("tether_fork_job",
                                            {"job_id": src.id, "from_stage": "validate"})
            assert code(hidden) == "job_not_found"

    anyio.run(reads)
