"""The real ``openai`` and ``anthropic`` SDKs against the wire-format server with rate limits:
the headers of their raw responses (``with_raw_response``) and of a 429 reach the shared
limiter, and the calls' results and usage are what the parsed responses say."""

import anthropic
import openai
import pytest

from tether import Estimate, JobState, Tether
from tether.job import Lease
from tether.worker.executor import execute
from tests.provider_server import FakeProviderServer

EST = Estimate(input_tokens=1200, max_output_tokens=300)


def make_app(url, server, clock, *, from_headers=True):
    app = Tether(url, clock=clock)
    app.set_rate_limit("openai/gpt-4o-mini", from_headers=from_headers)
    app.set_rate_limit("anthropic/claude-haiku-4-5")
    oa = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
    an = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
    aan = anthropic.AsyncAnthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
    messages = [{"role": "user", "content": "hello"}]

    @app.job("chat", max_attempts=3)
    def chat(ctx, payload):
        return ctx.call(key="q", provider="openai", model="gpt-4o-mini", estimate=EST,
                        fn=lambda: oa.chat.completions.with_raw_response.create(
                            model="gpt-4o-mini", max_tokens=300, messages=messages))

    @app.job("claude")
    def claude(ctx, payload):
        return ctx.call(key="m", provider="anthropic", model="claude-haiku-4-5", estimate=EST,
                        fn=lambda: an.messages.with_raw_response.create(
                            model="claude-haiku-4-5", max_tokens=300, messages=messages))

    @app.job("aclaude")
    async def aclaude(ctx, payload):
        return await ctx.acall(key="m", provider="anthropic", model="claude-haiku-4-5",
                               estimate=EST, fn=lambda: aan.messages.with_raw_response.create(
                                   model="claude-haiku-4-5", max_tokens=300,
                                   messages=messages))
    return app


def run(app, type):
    job = app.submit(type, {})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(job.id)


def scopes(app):
    return {s.scope: s for s in app.rate_scopes()}


def test_openai_raw_response_headers_and_actual_tokens_reach_the_limiter(sqlite_url, clock):
    with FakeProviderServer(requests=3, tokens=10_000, window_s=60) as server:
        app = make_app(sqlite_url, server, clock)
        job = run(app, "chat")
        assert job.state == JobState.SUCCEEDED
        assert job.result["choices"][0]["message"]["content"] == "a fine answer"
        (row,) = app.ledger(job.id)
        assert (row.input_tokens, row.output_tokens) == (1200, 300)
        seen = scopes(app)["openai/gpt-4o-mini"]
        assert seen.tokens == 1500, "the reservation was replaced by the tokens used"
        told = seen.provider
        assert (told.requests_limit, told.requests_remaining) == (3, 2)
        assert (told.tokens_limit, told.tokens_remaining) == (10_000, 8_500)
        assert 55 < told.requests_reset_at - clock.time() <= 60
        app.close()


@pytest.mark.parametrize("type", ["claude", "aclaude"])
def test_anthropic_raw_response_headers_reach_the_limiter(sqlite_url, clock, type):
    with FakeProviderServer(requests=5, window_s=30) as server:
        app = make_app(sqlite_url, server, clock)
        job = run(app, type)
        assert job.state == JobState.SUCCEEDED and job.result["content"][0]["text"]
        told = scopes(app)["anthropic/claude-haiku-4-5"].provider
        assert told.requests_remaining == 4
        assert 28 <= told.requests_reset_at - clock.time() <= 31, "from the response's Date"
        app.close()


def test_a_429s_retry_after_holds_the_scope_for_every_worker(sqlite_url, clock):
    with FakeProviderServer(requests=1, window_s=30) as server:
        ignoring = make_app(sqlite_url, server, clock, from_headers=False)
        assert run(ignoring, "chat").state == JobState.SUCCEEDED
        assert scopes(ignoring)["openai/gpt-4o-mini"].provider is None, "not following"
        follow = make_app(sqlite_url, server, clock)
        refused = run(follow, "chat")
        assert refused.state == JobState.RETRY_WAIT and server.refused == 1
        told = scopes(follow)["openai/gpt-4o-mini"].provider
        assert told.requests_remaining == 0 and 29 <= told.retry_at - clock.time() <= 30
        wait = ignoring.store.acquire_rate(list(follow.rate_limits.values()), tokens=1,
                                           job_id=99, key="x")
        assert 29 <= wait <= 30
        ignoring.close()
        follow.close()
