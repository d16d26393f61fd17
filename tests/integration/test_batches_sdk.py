"""Provider batches through the real ``openai`` and ``anthropic`` SDKs against the local
wire-format server (tests/provider_server.py), on both backends: the happy path, partial
failures, expiry, cancel at the provider, budget refusal before upload, and reattaching after
a lost batch id. The test decides when the provider finishes (``server.finish``)."""

from decimal import Decimal

import anthropic
import openai
import pytest

from tether import Budget, Estimate, JobState
from tether.core.batches import BatchFailure
from tether.providers.batch_anthropic import AnthropicBatches
from tether.providers.batch_openai import OpenAIBatches
from tether.worker.batch_poller import BatchPoller

from tests.contract.test_batches import lose_the_batch_id_then_replay
from tests.contract.test_waits import assert_parked, run_next
from tests.provider_server import FakeProviderServer

EST = Estimate(input_tokens=4000, max_output_tokens=500)
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


@pytest.fixture
def server():
    with FakeProviderServer() as s:
        yield s


@pytest.fixture(params=["openai", "anthropic"])
def provider(request, app, server):
    if request.param == "openai":
        app.add_batch_provider(OpenAIBatches(openai.OpenAI(
            base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)))
    else:
        app.add_batch_provider(AnthropicBatches(anthropic.Anthropic(
            base_url=server.url, api_key="sk-ant-test", max_retries=0)))
    return request.param


def _requests(modes):
    return {f"q{i}": {"max_tokens": 500,
                      "messages": [{"role": "user", "content": f"question {i} MODE:{m}"}]}
            for i, m in enumerate(modes)}


def _job(app, provider, modes):
    @app.job("gen")
    def gen(ctx, payload):
        answers = ctx.batch(key="gen", provider=provider, model=MODELS[provider],
                            requests=_requests(modes), estimate=EST)
        return {k: v.to_dict() if isinstance(v, BatchFailure) else v
                for k, v in answers.items()}


def _settle(app, clock):
    clock.advance(3600)
    return BatchPoller(app.store, app, interval=1).run_once()


def _money_holds(app, job_id):
    """bill <= reservation, ledger = settled, nothing left reserved."""
    (b,) = app.batches(job_id)
    ledger = sum((r.cost_usd for r in app.ledger(job_id)), Decimal(0))
    assert b.settled_usd == ledger <= b.reserved_usd
    used = app.get(job_id).budget.used
    assert used.reserved_usd == 0 and used.spent_usd == ledger
    return b


def test_happy_path_settles_each_item_at_half_the_standard_price(app, clock, server,
                                                                 provider):
    _job(app, provider, ["ok", "ok", "ok"])
    job = app.submit("gen")
    run_next(app)
    assert_parked(app, job.id)
    assert len(server.uploads) == 1
    clock.advance(60)
    assert BatchPoller(app.store, app, interval=1).run_once() == 0, "still in progress"
    server.finish(server.uploads[0])
    assert _settle(app, clock) == 1
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED
    assert all(v.get("usage") for v in done.result.values())
    b = _money_holds(app, job.id)
    assert (b.items_done, b.items_failed, b.remote_id) == (3, 0, server.uploads[0])
    assert b.standard_usd == 2 * b.settled_usd > 0
    assert len(app.ledger(job.id)) == 3 and len(server.uploads) == 1


def test_partial_failures_are_classified_and_refunded(app, clock, server, provider):
    _job(app, provider, ["ok", "context", "529"])
    job = app.submit("gen")
    run_next(app)
    server.finish(server.uploads[0])
    _settle(app, clock)
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED
    assert "usage" in done.result["q0"]
    assert done.result["q1"]["error_code"] == "provider_error"
    assert not done.result["q1"]["retryable"]
    assert done.result["q2"]["retryable"]
    b = _money_holds(app, job.id)
    assert (b.items_done, b.items_failed) == (1, 2)
    assert [r.key for r in app.ledger(job.id)] == ["batch:gen/q0"]


def test_an_expired_batch_settles_what_finished(app, clock, server, provider):
    _job(app, provider, ["ok", "ok", "ok"])
    job = app.submit("gen")
    run_next(app)
    server.finish(server.uploads[0], status="expired", answered=1)
    _settle(app, clock)
    done = run_next(app)
    assert "usage" in done.result["q0"]
    assert done.result["q1"]["retryable"] and done.result["q2"]["retryable"]
    assert _money_holds(app, job.id).items_done == 1


def test_a_batch_cancelled_at_the_provider_refunds_every_item(app, clock, server, provider):
    _job(app, provider, ["ok", "ok"])
    job = app.submit("gen")
    run_next(app)
    app.batch_adapter(provider).cancel(server.uploads[0])
    _settle(app, clock)
    done = run_next(app)
    assert all(v["retryable"] for v in done.result.values())
    assert _money_holds(app, job.id).settled_usd == 0 and app.ledger(job.id) == []


def test_a_batch_over_budget_is_never_uploaded(app, clock, server, provider):
    _job(app, provider, ["ok", "ok", "ok"])
    price = app.price_profile.batch_price(provider, MODELS[provider])
    job = app.submit("gen", budget=Budget(max_cost_usd=price.reservation(EST).cost_usd * 2))
    done = run_next(app)
    assert done.state == JobState.PAUSED and done.error_code == "budget_exhausted"
    assert server.uploads == [] and app.batches(job.id) == []


def test_a_lost_batch_id_is_reattached_or_spent_never_uploaded_twice(app, clock, server,
                                                                     provider):
    _job(app, provider, ["ok", "ok"])
    job = app.submit("gen")
    lose_the_batch_id_then_replay(app, clock)
    assert len(server.uploads) == 1, "no second upload"
    (b,) = app.batches(job.id)
    if provider == "openai":  # found by its metadata
        assert_parked(app, job.id)
        assert b.remote_id == server.uploads[0]
        server.finish(server.uploads[0])
        _settle(app, clock)
        assert run_next(app).state == JobState.SUCCEEDED
        _money_holds(app, job.id)
    else:  # Message Batches cannot be searched: the reservation is spent, unconfirmed
        done = app.get(job.id)
        assert done.state == JobState.SUCCEEDED
        assert {v["error_code"] for v in done.result.values()} == {"unconfirmed"}
        assert b.status == "unconfirmed" and b.settled_usd == b.reserved_usd
        assert all(not r.confirmed for r in app.ledger(job.id))


@pytest.fixture
def background(app, server):
    from tether.providers.background_openai import OpenAIBackground
    app.add_batch_provider(OpenAIBackground(openai.OpenAI(
        base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)))

    @app.job("long_call")
    def long_call(ctx, payload):
        out = ctx.call(key="essay", provider="openai", model="gpt-4.1-mini", estimate=EST,
                       request={"input": f"write an essay MODE:{payload['mode']}"},
                       background=True)
        return out["usage"]


def test_a_background_call_waits_without_a_lease_and_never_calls_twice(app, clock, server,
                                                                       background):
    job = app.submit("long_call", {"mode": "ok"})
    run_next(app)
    assert_parked(app, job.id)
    (rid,) = server.uploads
    (b,) = app.batches(job.id)
    assert b.remote_id.endswith(rid) and b.key == "background:essay"
    clock.advance(10)
    assert BatchPoller(app.store, app, interval=1).run_once() == 0, "still queued"
    server.finish(rid)
    assert _settle(app, clock) == 1
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result["input_tokens"] == 500
    assert server.uploads == [rid], "the replay reattached to the response id"
    (row,) = app.ledger(job.id)
    std = app.price_profile.price("openai", "gpt-4.1-mini")
    assert row.input_per_mtok == std.input_per_mtok, "background calls pay the standard price"
    _money_holds(app, job.id)


def test_a_failed_background_call_fails_like_a_call(app, clock, server, background):
    job = app.submit("long_call", {"mode": "500"})
    run_next(app)
    server.finish(server.uploads[0])
    _settle(app, clock)
    done = run_next(app)
    assert done.state in (JobState.RETRY_WAIT, JobState.FAILED)
    assert app.ledger(job.id) == [] and app.get(job.id).budget.used.reserved_usd == 0


def test_an_upload_the_provider_refused_is_released_and_sent_again_on_retry(
        app, clock, server, provider, monkeypatch):
    _job(app, provider, ["ok", "ok"])
    adapter = app.batch_adapter(provider)
    real = adapter.submit
    calls = []

    def flaky(**kwargs):  # the first upload answers 503; the retry's goes through
        calls.append(1)
        if len(calls) == 1:
            class Overloaded(Exception):
                status_code = 503
                body = {"error": {"message": "overloaded", "type": "server_error"}}
                response = None
            raise Overloaded("overloaded")
        return real(**kwargs)
    monkeypatch.setattr(adapter, "submit", flaky)
    job = app.submit("gen")
    failed = run_next(app)
    assert failed.state == JobState.RETRY_WAIT and app.batches(job.id) == []
    assert app.get(job.id).budget.used.reserved_usd == 0, "the reservation was released"
    clock.advance(3600)
    app.store.promote_due()
    run_next(app)
    assert_parked(app, job.id)
    assert len(server.uploads) == 1 and app.batches(job.id)[0].status == "submitted"


def test_openai_find_stops_listing_at_batches_older_than_the_reservation(server):
    """The Batch API lists the account's batches newest first and cannot filter them by
    metadata: ``find`` pages only back to the reservation (less the clock skew allowed)."""
    from tether.providers.batch_openai import FIND_SKEW_S
    adapter = OpenAIBatches(openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test",
                                          max_retries=0))
    import time
    now = int(time.time())
    server.other_batches(600, created_at=now - 86_400)  # last week's, someone else's
    mine = adapter.submit(tether_key="tether:7:batch:gen:abc", model="gpt-4o-mini",
                          requests={"q0": {"messages": []}})
    server.other_batches(250, created_at=now + 5)  # made since, by other jobs

    def listed():
        return sum(1 for path, method in server.requests
                   if method == "GET" and path.split("?")[0] == "/v1/batches")
    before = listed()
    assert adapter.find("tether:7:batch:gen:abc", since=now - 60) == mine
    assert listed() - before == 3, "250 newer batches: mine is on the third page of 100"
    before = listed()
    assert adapter.find("tether:8:batch:gen:abc", since=now - 60) is None
    assert listed() - before == 3, "stops at the first batch made before the reservation"
    assert now - 86_400 < now - 60 - FIND_SKEW_S
    before = listed()
    assert adapter.find("tether:8:batch:gen:abc") is None
    assert listed() - before == 9, "no reservation time given: every page (851 batches)"


def test_anthropic_item_keys_outside_its_rule_are_sent_under_mapped_ids(app, clock, server):
    app.add_batch_provider(AnthropicBatches(anthropic.Anthropic(
        base_url=server.url, api_key="sk-ant-test", max_retries=0)))
    keys = ["plain_key-1", "chapter 2/intro", "é" * 3, "x" * 100]

    @app.job("odd")
    def odd(ctx, payload):
        answers = ctx.batch(key="odd", provider="anthropic", model=MODELS["anthropic"],
                            requests={k: _requests(["ok"])["q0"] for k in keys}, estimate=EST)
        return {k: "failed" if isinstance(v, BatchFailure) else "ok" for k, v in answers.items()}
    job = app.submit("odd")
    run_next(app)
    (sent,) = server.uploads
    ids = list(server.httpd.batches[sent]["items"])
    assert ids[0] == "plain_key-1", "a key the rule allows is sent as it is"
    assert ids[1].startswith("chapter_2_intro-") and all(len(i) <= 64 for i in ids)
    server.finish(sent)
    assert _settle(app, clock) == 1
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result == {k: "ok" for k in keys}
    assert sorted(r.key for r in app.ledger(job.id)) == sorted(f"batch:odd/{k}" for k in keys)


def test_anthropic_keys_that_would_share_an_id_are_refused_before_the_reservation(
        app, clock, server):
    from tether.core.batches import item_ids
    from tether.providers.batch_anthropic import CUSTOM_ID
    app.add_batch_provider(AnthropicBatches(anthropic.Anthropic(
        base_url=server.url, api_key="sk-ant-test", max_retries=0)))
    twin = item_ids(["a b"], CUSTOM_ID)["a b"]

    @app.job("twins")
    def twins(ctx, payload):
        ctx.batch(key="t", provider="anthropic", model=MODELS["anthropic"],
                  requests={"a b": _requests(["ok"])["q0"], twin: _requests(["ok"])["q0"]},
                  estimate=EST)
    job = app.submit("twins")
    done = run_next(app)
    assert done.state == JobState.FAILED and done.error_code == "invalid_call"
    assert "would both be sent as" in done.error_summary
    assert app.batches(job.id) == [] and server.uploads == []
    assert app.get(job.id).budget.used.reserved_usd == 0
