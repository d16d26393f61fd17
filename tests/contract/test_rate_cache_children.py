"""Shared rate limits, the call cache and child jobs, on every backend (injected clock)."""

import threading

from tether import Estimate, JobState, Metered, Usage
from tether.job import Lease
from tether.store.ratelimits import RateLimit
from tether.worker.executor import execute


def run_one(app):
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=3600)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(c.job.id)


def test_store_grants_at_most_rpm_in_any_60s_window(store, clock):
    lim = [RateLimit("openai", rpm=3)]
    grants = []
    for i in range(10):
        wait = store.acquire_rate(lim, tokens=1, job_id=1, key=f"k{i}")
        while wait > 0:
            clock.advance(wait)
            wait = store.acquire_rate(lim, tokens=1, job_id=1, key=f"k{i}")
        grants.append(clock.time())
        clock.advance(1)
    for t in grants:
        assert sum(1 for g in grants if t <= g < t + 60) <= 3
    assert grants[3] - grants[0] >= 60


def test_tokens_count_from_the_reservation_and_are_refunded_on_settle(store, clock):
    lim = [RateLimit("anthropic", tpm=1000)]
    assert store.acquire_rate(lim, tokens=800, job_id=1, key="a") == 0
    assert store.acquire_rate(lim, tokens=300, job_id=1, key="b") > 0
    store.settle_rate(1, "a", 100)
    assert store.acquire_rate(lim, tokens=300, job_id=1, key="b") == 0


def test_two_workers_sharing_an_rpm_limit_never_exceed_it(app, clock):
    app.set_rate_limit("simulated", rpm=5)
    stamps, lock = [], threading.Lock()
    granted, decide = [], threading.Lock()
    acquire = app.store.acquire_rate

    def spy(limits, **kw):
        # Both threads share the injected clock and sleep on it, so decisions are made one at
        # a time at a recorded instant: the limiter's own view of time.
        with decide:
            t = clock.time()
            wait = acquire(limits, now=t, **kw)
            if wait == 0:
                granted.append(t)
            return wait
    app.store.acquire_rate = spy

    def fn():
        with lock:
            stamps.append(clock.time())
        return Metered("x", Usage(5, 5))

    @app.job("limited")
    def limited(ctx, payload):
        return [ctx.call(key=f"k{i}", provider="simulated", model="sim-small",
                         estimate=Estimate(input_tokens=5, max_output_tokens=5), fn=fn)
                for i in range(6)]
    for _ in range(2):
        app.submit("limited", {})
    claims = app.store.claim("w", queues=None, limit=2, lease_ttl=10**6)
    threads = [threading.Thread(target=execute, args=(app, c.job, Lease(c.job.id, c.attempt)))
               for c in claims]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(app.get(c.job.id).state == JobState.SUCCEEDED for c in claims)
    assert len(stamps) == 12
    assert len(granted) == 12
    for t in granted:
        assert sum(1 for g in granted if t <= g < t + 60) <= 5, granted


def test_call_cache_reuses_an_identical_request_across_jobs(app):
    calls = []

    @app.job("cached")
    def cached(ctx, payload):
        req = {"messages": [{"role": "user", "content": payload["q"]}]}
        return ctx.call(key="q", provider="simulated", model="sim-small", request=req,
                        cache=True, estimate=Estimate(input_tokens=9, max_output_tokens=9),
                        fn=lambda: calls.append(1) or Metered({"a": payload["q"]}, Usage(9, 9)))
    first = app.submit("cached", {"q": "same"}, idempotency_key="one")
    assert run_one(app).result == {"a": "same"}
    second = app.submit("cached", {"q": "same"}, idempotency_key="two")
    j = run_one(app)
    assert j.id == second.id and j.result == {"a": "same"}
    assert len(calls) == 1, "the second job made zero provider calls"
    assert app.ledger(second.id) == [] and j.budget.used.spent_usd == 0
    assert app.events(second.id)[-1].data["stats"]["calls_cached"] == 1
    other = app.submit("cached", {"q": "different"})
    run_one(app)
    assert len(calls) == 2 and other.id != first.id


def test_child_identity_is_derived_from_parent_and_key(app):
    @app.job("child")
    def child(ctx, payload):
        return payload

    @app.job("parent")
    def parent(ctx, payload):
        a = ctx.enqueue("child", {"n": 1}, key="first")
        again = ctx.enqueue("child", {"n": 1}, key="first")
        b = ctx.enqueue("child", {"n": 2}, key="second")
        return [a.id, again.id, b.id]
    p = app.submit("parent", {})
    j = run_one(app)
    a, again, b = j.result
    assert a == again != b
    kids = [x for x in app.list(limit=100) if x.parent_id == p.id]
    assert sorted(k.id for k in kids) == sorted([a, b])
