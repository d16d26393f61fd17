"""The real ``openai`` and ``anthropic`` SDKs against a local server speaking their wire formats:
usage read from SDK responses, failures classified, every paid call in the ledger."""

from decimal import Decimal

import anthropic
import openai
import pytest

from tether import Estimate, JobState, Tether
from tether.job import Lease
from tether.worker.executor import execute
from tests.provider_server import FakeProviderServer


@pytest.fixture(scope="module")
def server():
    with FakeProviderServer() as s:
        yield s


@pytest.fixture
def sdk_app(sqlite_url, server, clock):
    app = Tether(sqlite_url, clock=clock)
    oa = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
    an = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
    est = Estimate(input_tokens=4000, max_output_tokens=500)

    @app.job("openai_chat", max_attempts=3)
    def openai_chat(ctx, payload):
        return ctx.call(key="q", provider="openai", model="gpt-4o-mini", estimate=est,
                        fn=lambda: oa.chat.completions.create(
                            model="gpt-4o-mini", max_tokens=500,
                            messages=[{"role": "user", "content": payload["content"]}]))

    @app.job("openai_responses")
    def openai_responses(ctx, payload):
        out = ctx.call(key="r", provider="openai", model="gpt-4.1-mini", estimate=est,
                       fn=lambda: oa.responses.create(model="gpt-4.1-mini",
                                                      input=payload["content"]))
        return out["output"][0]["content"][0]["text"]

    @app.job("claude", max_attempts=3)
    def claude(ctx, payload):
        return ctx.call(key="m", provider="anthropic", model="claude-haiku-4-5",
                        estimate=Estimate(input_tokens=4000, max_output_tokens=500),
                        fn=lambda: an.messages.create(
                            model="claude-haiku-4-5", max_tokens=500,
                            messages=[{"role": "user", "content": payload["content"]}]))
    yield app
    app.close()


def run(app, type, content):
    job = app.submit(type, {"content": content})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(job.id)


def test_openai_chat_usage_with_cached_and_reasoning_tokens(sdk_app):
    job = run(sdk_app, "openai_chat", "hello")
    assert job.state == JobState.SUCCEEDED
    assert job.result["choices"][0]["message"]["content"] == "a fine answer"
    (row,) = sdk_app.ledger(job.id)
    assert (row.input_tokens, row.output_tokens, row.cached_input_tokens,
            row.reasoning_tokens) == (1200, 300, 1000, 100)
    expected = (200 * Decimal("0.15") + 1000 * Decimal("0.075") + 300 * Decimal("0.60")) / 10**6
    assert row.cost_usd == expected and row.confirmed
    assert job.budget.used.spent_usd == expected


def test_openai_responses_usage(sdk_app):
    job = run(sdk_app, "openai_responses", "hello")
    assert job.state == JobState.SUCCEEDED and job.result == "ok"
    (row,) = sdk_app.ledger(job.id)
    assert (row.input_tokens, row.output_tokens, row.cached_input_tokens,
            row.reasoning_tokens) == (500, 80, 200, 30)


def test_anthropic_usage_counts_cache_reads_and_writes(sdk_app):
    job = run(sdk_app, "claude", "hello")
    assert job.state == JobState.SUCCEEDED
    (row,) = sdk_app.ledger(job.id)
    assert (row.input_tokens, row.cached_input_tokens, row.output_tokens) == (2100, 2000, 25)
    assert (row.cache_write_tokens, row.cache_write_1h_tokens) == (60, 15)
    # claude-haiku-4-5: input 1.00, cache read 0.10, 5-minute write 1.25, 1-hour write 2.00
    expected = (40 * Decimal("1.00") + 2000 * Decimal("0.10") + 45 * Decimal("1.25")
                + 15 * Decimal("2.00") + 25 * Decimal("5.00")) / 10**6
    assert row.cost_usd == expected


@pytest.mark.parametrize("type,mode,delay", [
    ("openai_chat", "429", 7), ("openai_chat", "500", 0), ("openai_chat", "503", 3),
    ("claude", "529", 0),
])
def test_transient_statuses_retry_honour_retry_after_and_cost_nothing(sdk_app, clock, type,
                                                                      mode, delay):
    job = run(sdk_app, type, f"MODE:{mode}")
    assert job.state == JobState.RETRY_WAIT and job.error_code == "transient"
    assert job.run_after.timestamp() >= clock.time() + delay
    assert sdk_app.ledger(job.id) == [] and job.budget.used.spent_usd == 0
    (entry,) = sdk_app.journal(job.id)
    assert entry.status == "failed"


def test_context_length_is_fatal(sdk_app):
    job = run(sdk_app, "openai_chat", "MODE:context")
    assert job.state == JobState.FAILED and job.error_code == "provider_error"
    assert "context" in job.error_summary and job.budget.used.spent_usd == 0


def test_auth_failure_pauses_for_the_operator(sdk_app):
    job = run(sdk_app, "openai_chat", "MODE:401")
    assert job.state == JobState.PAUSED and job.error_code == "provider_auth"


def test_quota_exhaustion_pauses_as_budget_exhausted(sdk_app):
    job = run(sdk_app, "openai_chat", "MODE:quota")
    assert job.state == JobState.PAUSED and job.error_code == "budget_exhausted"
    assert job.budget.used.spent_usd == 0


@pytest.mark.parametrize("type", ["openai_chat", "claude"])
def test_refusal_in_a_200_body_is_a_policy_block_and_is_paid(sdk_app, type):
    job = run(sdk_app, type, "MODE:refusal")
    assert job.state == JobState.FAILED and job.error_code == "policy_block"
    assert job.attempt_count == 1, "never retried"
    (row,) = sdk_app.ledger(job.id)
    assert row.confirmed and row.cost_usd > 0
    assert job.budget.used.spent_usd == row.cost_usd
