"""Job code through the real executor (in-process worker, real store, injected clock)."""

import asyncio
import threading

from tether import (
    BudgetExhausted, Estimate, JobState, Metered, PolicyBlock, TransientError, Usage,
)
from tether.job import Lease
from tether.worker.executor import execute


def claim_and_run(app):
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(c.job.id)


def sim_call(ctx, key, calls=None):
    def fn():
        if calls is not None:
            calls.append(key)
        return Metered({"k": key}, Usage(10, 5))
    return ctx.call(key=key, provider="simulated", model="sim-small",
                    estimate=Estimate(input_tokens=10, max_output_tokens=5), fn=fn)


def test_async_job_and_stages(app):
    @app.job("a")
    async def a(ctx, payload):
        await asyncio.sleep(0)
        first = ctx.stage("one", lambda: {"x": payload["x"] * 2})
        got = await ctx.acall(key="k", provider="simulated", model="sim-small",
                              estimate=Estimate(input_tokens=10, max_output_tokens=5),
                              fn=lambda: asyncio.sleep(0, Metered("v", Usage(1, 1))))
        return {"first": first, "got": got}
    job = app.submit("a", {"x": 2})
    assert claim_and_run(app).result == {"first": {"x": 4}, "got": "v"}
    assert len(app.ledger(job.id)) == 1


def test_declared_stage_list_feeds_each_stage_the_previous_output(app):
    def parse(ctx, value):
        return value["text"].split()

    def count(ctx, words):
        return {"words": len(words)}
    app.pipeline("p", [parse, count])
    job = app.submit("p", {"text": "a b c"})
    assert claim_and_run(app).result == {"words": 3}
    assert [c.stage for c in app.checkpoints(job.id)] == ["parse", "count"]


def test_swallowed_cancel_still_cancels_and_no_call_starts_after_it(app):
    calls = []

    @app.job("sneaky")
    def sneaky(ctx, payload):
        sim_call(ctx, "before", calls)
        app.cancel(ctx.id)
        try:
            sim_call(ctx, "after", calls)
        except BaseException:  # noqa: BLE001 - the test's point: job code tries to swallow it
            pass
        return "finished anyway"
    job = app.submit("sneaky", {})
    j = claim_and_run(app)
    assert j.state == JobState.CANCELLED and calls == ["before"]
    assert [e.key for e in app.store.journal(job.id)] == ["before"]


def test_retry_resumes_from_stage_and_journal(app, clock):
    calls = []
    fail = {"n": 1}

    @app.job("resumable")
    def resumable(ctx, payload):
        ctx.stage("prep", lambda: calls.append("prep") or 1)
        for i in range(3):
            sim_call(ctx, f"k{i}", calls)
            if i == 1 and fail["n"]:
                fail["n"] -= 1
                raise TransientError("boom", status=503)
        return "ok"
    job = app.submit("resumable", {})
    assert claim_and_run(app).state == JobState.RETRY_WAIT
    clock.advance(61)
    app.store.promote_due()
    assert claim_and_run(app).state == JobState.SUCCEEDED
    assert calls == ["prep", "k0", "k1", "k2"]
    assert len(app.ledger(job.id)) == 3


def test_map_runs_concurrently_and_reports_stats(app):
    seen = set()
    lock = threading.Lock()

    @app.job("fan")
    def fan(ctx, payload):
        def one(i):
            with lock:
                seen.add(threading.current_thread().name)
            return sim_call(ctx, f"k{i}")
        return ctx.map(one, range(16), concurrency=8)
    job = app.submit("fan", {})
    j = claim_and_run(app)
    assert j.state == JobState.SUCCEEDED and len(j.result) == 16 and len(seen) > 1
    assert app.events(job.id)[-1].data["stats"]["calls_made"] == 16


def test_map_returns_results_in_item_order(app):
    @app.job("ordered")
    def ordered(ctx, payload):
        return ctx.map(lambda i: sim_call(ctx, f"k{i}")["k"], range(24), concurrency=8)
    app.submit("ordered", {})
    assert claim_and_run(app).result == [f"k{i}" for i in range(24)]


def test_map_stops_starting_items_after_one_fails_and_raises_a_signal_first(app):
    """A failing item stops the items not yet started; the error raised is a control signal
    if any item raised one, though a plain error came from an earlier item."""
    started, barrier = [], threading.Barrier(2)

    @app.job("mixed", max_attempts=1)
    def mixed(ctx, payload):
        def one(i):
            started.append(i)
            barrier.wait(5)  # items 0 and 1 run at once, then both fail
            if i == 0:
                raise ValueError("item 0 broke")
            raise BudgetExhausted("item 1 hit the limit", limit="max_calls", scope="job")
        return ctx.map(one, range(40), concurrency=2)

    app.submit("mixed", {})
    j = claim_and_run(app)
    assert j.state == JobState.PAUSED and j.error_code == "budget_exhausted"
    assert sorted(started) == [0, 1], "no item started after the failures"


def test_concurrent_calls_share_writes_and_never_cross_the_budget(app):
    """ctx.map's calls are journaled through shared transactions (fewer writes than two per
    call), and the reservations in one write still respect the job's limit together."""
    barrier = threading.Barrier(8)

    @app.job("fan")
    def fan(ctx, payload):
        def one(i):
            if i < 8:
                barrier.wait(5)  # the first eight reserve at once
            return sim_call(ctx, f"k{i}")
        try:
            ctx.map(one, range(40), concurrency=8)
        finally:
            stats.update(flushes=ctx.calls.flushes, ops=ctx.calls.ops)

    stats: dict = {}
    job = app.submit("fan", {}, budget={"max_calls": 30})
    j = claim_and_run(app)
    assert j.state == JobState.PAUSED and j.error_code == "budget_exhausted"
    used = app.get(job.id).budget.used
    assert used.calls == 30 and used.reserved_calls == 0
    assert len(app.ledger(job.id)) == 30
    assert stats["flushes"] < stats["ops"]  # some write carried more than one op


def sim_acall(ctx, key, calls=None):
    async def fn():
        if calls is not None:
            calls.append(key)
        await asyncio.sleep(0)
        return Metered({"k": key}, Usage(10, 5))
    return ctx.acall(key=key, provider="simulated", model="sim-small",
                     estimate=Estimate(input_tokens=10, max_output_tokens=5), fn=fn)


def test_concurrent_async_calls_share_writes_and_never_cross_the_budget(app):
    """The same promise for ``acall``: coroutines' reservations and settlements are written
    together, off the event loop, and still respect the limit together."""

    @app.job("afan")
    async def afan(ctx, payload):
        gate = asyncio.Semaphore(8)

        async def one(i):
            async with gate:
                return await sim_acall(ctx, f"k{i}")
        try:
            out = await asyncio.gather(*(one(i) for i in range(40)), return_exceptions=True)
        finally:
            stats.update(flushes=ctx.calls.flushes, ops=ctx.calls.ops)
        stats["refused"] = sum(isinstance(o, BudgetExhausted) for o in out)
        return [o for o in out if not isinstance(o, BaseException)]

    stats: dict = {}
    job = app.submit("afan", {}, budget={"max_calls": 30})
    j = claim_and_run(app)
    assert j.state == JobState.PAUSED and j.error_code == "budget_exhausted"
    used = app.get(job.id).budget.used
    assert used.calls == 30 and used.reserved_calls == 0 and stats["refused"] == 10
    assert len(app.ledger(job.id)) == 30
    assert stats["flushes"] < stats["ops"]  # some write carried more than one op


def test_a_retried_async_job_does_not_repeat_its_journaled_calls(app, clock):
    calls = []

    @app.job("aflaky", max_attempts=3)
    async def aflaky(ctx, payload):
        got = await asyncio.gather(*(sim_acall(ctx, f"k{i}", calls) for i in range(6)))
        if ctx.attempt == 1:
            raise TransientError("upstream hiccup")
        return got

    job = app.submit("aflaky", {})
    assert claim_and_run(app).state == JobState.RETRY_WAIT
    clock.advance(3600)
    app.store.promote_due()
    j = claim_and_run(app)
    assert j.state == JobState.SUCCEEDED and len(j.result) == 6
    assert sorted(calls) == sorted(f"k{i}" for i in range(6)), "each call was paid once"
    assert len(app.ledger(job.id)) == 6


def test_policy_block_fails_at_once(app):
    @app.job("blocked", max_attempts=5)
    def blocked(ctx, payload):
        raise PolicyBlock("PII found")
    app.submit("blocked", {})
    j = claim_and_run(app)
    assert j.state == JobState.FAILED and j.error_code == "policy_block"


def test_budget_exhaustion_pauses_then_raise_resumes(app, clock):
    @app.job("spender")
    def spender(ctx, payload):
        return [sim_call(ctx, f"k{i}") for i in range(5)]
    job = app.submit("spender", {}, budget={"max_calls": 2})
    j = claim_and_run(app)
    assert j.state == JobState.PAUSED and j.error_code == "budget_exhausted"
    assert j.budget.used.calls == 2
    assert app.set_budget(job.id, max_calls=10).state == JobState.QUEUED
    j = claim_and_run(app)
    assert j.state == JobState.SUCCEEDED and j.budget.used.calls == 5


def test_non_json_result_fails_clearly(app):
    @app.job("bad")
    def bad(ctx, payload):
        return object()
    app.submit("bad", {})
    j = claim_and_run(app)
    assert j.state == JobState.FAILED and j.error_code == "invalid_result"


def test_unknown_exception_is_recorded_with_code_and_summary(app):
    @app.job("buggy")
    def buggy(ctx, payload):
        raise KeyError("missing")
    job = app.submit("buggy", {})
    j = claim_and_run(app)
    assert (j.state, j.error_code) == (JobState.FAILED, "unhandled_error")
    assert "KeyError" in j.error_summary
    (a,) = app.attempts(job.id)
    assert a.error_code == "unhandled_error" and "KeyError" in a.error_summary
