"""MCP tool inputs, through the SDK's client over stdio: schemas that forbid unknown arguments
and describe every argument, typed outputs, and bad input answered with a stable code (never
a traceback, never a second job) on both backends."""

from __future__ import annotations

import anyio
import pytest

from tether import JobState, Tether
from tests.e2e.mcp_harness import code, data, failure, stdio

TOOLS = {
    "tether_submit_job", "tether_get_job", "tether_list_jobs", "tether_get_events",
    "tether_get_attempts", "tether_get_ledger", "tether_get_checkpoints",
    "tether_cancel_job", "tether_pause_job", "tether_resume_job", "tether_retry_job",
    "tether_requeue_job", "tether_set_job_budget", "tether_fork_job", "tether_signal_job",
    "tether_get_waits", "tether_get_batches", "tether_make_callback", "tether_list_callbacks",
    "tether_list_queues", "tether_pause_queue", "tether_resume_queue", "tether_list_workers",
    "tether_list_types", "tether_pause_type", "tether_resume_type", "tether_list_limits",
    "tether_set_limit", "tether_clear_limit",
    "tether_spend", "tether_get_project_budget", "tether_set_project_budget",
    "tether_budget_crossings",
    "tether_create_schedule", "tether_list_schedules", "tether_get_schedule",
    "tether_pause_schedule", "tether_resume_schedule", "tether_delete_schedule",
    "tether_create_webhook", "tether_list_webhooks", "tether_delete_webhook",
    "tether_list_deliveries", "tether_get_delivery", "tether_resend_delivery",
}
JOB_TOOLS = ["tether_get_job", "tether_get_events", "tether_get_attempts", "tether_get_ledger",
             "tether_get_checkpoints", "tether_cancel_job", "tether_pause_job",
             "tether_resume_job", "tether_retry_job", "tether_requeue_job", "tether_get_waits",
             "tether_get_batches"]
BIG = 2**63


@pytest.fixture
def local(database_url):
    app = Tether(database_url)
    yield app
    app.close()


def objects(schema: dict):
    """Every object schema in ``schema``: the root and each definition."""
    yield "root", schema
    for name, sub in schema.get("$defs", {}).items():
        if sub.get("type") == "object":
            yield name, sub


def resolve(schema: dict, prop: dict) -> dict:
    ref = prop.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[-1]] if ref else prop


def test_every_tool_forbids_unknown_arguments_describes_them_and_types_its_output(sqlite_url):
    async def session():
        async with stdio(sqlite_url) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(session)
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.description, tool.name
        for where, schema in objects(tool.input_schema):
            assert schema.get("additionalProperties") is False, (tool.name, where)
            for name, prop in schema.get("properties", {}).items():
                assert prop.get("description"), (tool.name, where, name)
        out = tool.output_schema
        assert out and out["type"] == "object", tool.name
    job_out = next(t for t in tools if t.name == "tether_get_job").output_schema
    state = resolve(job_out, job_out["properties"]["state"])
    assert state["enum"] == [s.value for s in JobState]
    budget = resolve(job_out, job_out["properties"]["budget"])
    assert budget["type"] == "object" and set(budget["properties"]) == {"limits", "used"}
    used = resolve(job_out, budget["properties"]["used"])
    assert {"spent_usd", "reserved_usd", "calls", "input_tokens"} <= set(used["properties"])
    submit_out = next(t for t in tools if t.name == "tether_submit_job").output_schema
    assert submit_out["properties"]["created"]["type"] == "boolean"


def test_a_misspelt_argument_is_refused_and_a_retry_creates_no_second_job(database_url, local):
    async def session():
        async with stdio(database_url) as client:
            for _ in range(2):
                typo = await client.call_tool("tether_submit_job", {
                    "type": "echo", "payload": {"n": 1}, "idempotencyKey": "doc-42"})
                text, problem = failure(typo)
                assert problem["code"] == "validation_error"
                assert "idempotencyKey" in text and "did you mean 'idempotency_key'" in text
                assert problem["errors"][0]["field"] == "idempotencyKey"
            nested = await client.call_tool("tether_submit_job", {
                "type": "echo", "budget": {"max_cost": "1"}})
            assert code(nested) == "validation_error"
            assert "budget.max_cost" in failure(nested)[0]
            assert data(await client.call_tool("tether_list_jobs", {}))["items"] == []
            first = data(await client.call_tool("tether_submit_job", {
                "type": "echo", "payload": {"n": 1}, "idempotency_key": "doc-42"}))
            again = data(await client.call_tool("tether_submit_job", {
                "type": "echo", "payload": {"n": 1}, "idempotency_key": "doc-42"}))
            assert first["created"] is True and again["created"] is False
            assert again["job"]["id"] == first["job"]["id"]
            extra = await client.call_tool("tether_get_job", {"job_id": first["job"]["id"],
                                                              "verbose": True})
            assert code(extra) == "validation_error"

    anyio.run(session)
    assert [j.idempotency_key for j in local.list()] == ["doc-42"]


def test_ids_past_two_to_the_63_are_validation_errors_on_every_tool(database_url, local):
    job = local.submit("echo", {})

    async def session():
        async with stdio(database_url) as client:
            for tool in JOB_TOOLS:
                for bad in (BIG, 2**64, 0, -1):
                    result = await client.call_tool(tool, {"job_id": bad})
                    text, problem = failure(result)
                    assert problem["code"] == "validation_error", (tool, bad, text)
                    assert problem["errors"][0]["field"] == "job_id"
                edge = await client.call_tool(tool, {"job_id": BIG - 1})
                assert code(edge) == "job_not_found", tool
            budget = await client.call_tool("tether_set_job_budget", {
                "job_id": BIG, "budget": {"max_calls": 1}})
            assert code(budget) == "validation_error"
            after = await client.call_tool("tether_get_events", {"job_id": job.id,
                                                                 "after": BIG})
            assert code(after) == "validation_error"
            last = data(await client.call_tool("tether_get_events", {"job_id": job.id,
                                                                     "after": BIG - 1}))
            assert last["items"] == [] and last["next_after"] == BIG - 1

    anyio.run(session)
    assert local.get(job.id).state == JobState.QUEUED


def test_booleans_and_text_are_no_numbers_on_any_tool(database_url, local):
    """The SDK's pydantic would read true as 1 and "7" as 7: job 1, a page of 7."""
    job = local.submit("echo", {})

    async def session():
        async with stdio(database_url) as client:
            for args in ({"job_id": True}, {"job_id": str(job.id)}):
                assert code(await client.call_tool("tether_get_job", args)) == \
                    "validation_error", args
            for args in ({"limit": True}, {"limit": "7"}):
                assert code(await client.call_tool("tether_list_jobs", args)) == \
                    "validation_error", args
            events = await client.call_tool("tether_get_events", {"job_id": job.id,
                                                                  "after": False})
            assert code(events) == "validation_error"
            for extra in ({"priority": True}, {"max_attempts": "2"},
                          {"budget": {"max_duration_s": True}}):
                result = await client.call_tool("tether_submit_job", {"type": "echo", **extra})
                assert code(result) == "validation_error", extra
            whole = data(await client.call_tool("tether_list_jobs", {"limit": 1.0}))
            assert [j["id"] for j in whole["items"]] == [job.id]

    anyio.run(session)
    assert [j.id for j in local.list()] == [job.id]


def test_a_start_time_as_a_number_is_unix_seconds_as_in_python(database_url, local):
    """The SDK's pydantic would read 4e10 as milliseconds (1971); a time past 9999 is refused."""
    from datetime import UTC, datetime

    async def session():
        async with stdio(database_url) as client:
            made = data(await client.call_tool("tether_submit_job", {
                "type": "echo", "run_after": 4e10}))
            late = await client.call_tool("tether_submit_job", {"type": "echo",
                                                                 "run_after": 1e12})
            return made["job"]["id"], code(late)

    job_id, late = anyio.run(session)
    assert local.get(job_id).run_after == datetime.fromtimestamp(4e10, UTC)
    assert late == "validation_error" and len(local.list()) == 1


def test_a_malformed_idempotency_key_is_invalid_idempotency_key(database_url, local):
    async def session():
        async with stdio(database_url) as client:
            for key in ("", "has space", "x" * 201, "caf\u00e9", "a\x00b"):
                result = await client.call_tool("tether_submit_job", {
                    "type": "echo", "idempotency_key": key})
                assert code(result) == "invalid_idempotency_key", repr(key)

    anyio.run(session)
    assert local.list() == []


def test_nul_characters_are_refused_with_a_client_error_on_both_backends(database_url, local):
    """PostgreSQL cannot store or match NUL; SQLite gives the same answer for the same input."""
    job = local.submit("echo", {}, queue="q")

    async def session():
        async with stdio(database_url) as client:
            for name in ("search", "type", "queue", "project"):
                listed = await client.call_tool("tether_list_jobs", {name: "a\x00b"})
                assert code(listed) == "invalid_argument", name
            cancel = await client.call_tool("tether_cancel_job", {"job_id": job.id,
                                                                  "reason": "a\x00b"})
            assert code(cancel) == "invalid_argument"
            for arguments, expected in (
                    ({"type": "echo", "payload": {"text": "a\x00b"}}, "invalid_payload"),
                    ({"type": "echo", "payload": {"a\x00b": 1}}, "invalid_payload"),
                    ({"type": "a\x00b"}, "invalid_argument"),
                    ({"type": "echo", "queue": "a\x00b"}, "invalid_argument"),
                    ({"type": "echo", "project": "a\x00b"}, "invalid_argument")):
                submitted = await client.call_tool("tether_submit_job", arguments)
                assert code(submitted) == expected, arguments
            paused = await client.call_tool("tether_pause_queue", {"name": "a\x00b"})
            assert code(paused) == "invalid_argument"

    anyio.run(session)
    assert [j.id for j in local.list()] == [job.id]
    assert local.get(job.id).state == JobState.QUEUED
