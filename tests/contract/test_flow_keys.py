"""Singleton and debounce per key (core/flowkeys.py, store/flowkeys.py): every backend."""

import threading

import pytest

from tether import JobState, Tether
from tether.errors import ConfigurationError, IdempotencyConflict, InvalidArgument
from tether.testing.invariants import history_problems


def register(app):
    @app.job("sync", singleton=True, flow_key="customer")
    def sync(ctx, payload):
        return payload

    @app.job("reindex", debounce_s=30, flow_key=lambda p: p["doc"])
    def reindex(ctx, payload):
        return payload

    @app.job("plain")
    def plain(ctx, payload):
        return payload


def claim_one(app):
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    return c.job


def test_a_singleton_key_has_one_live_job_and_a_repeat_returns_it(app):
    register(app)
    first, created = app.submit_with_status("sync", {"customer": "c1", "n": 1})
    again, again_created = app.submit_with_status("sync", {"customer": "c1", "n": 2})
    other = app.submit("sync", {"customer": "c2", "n": 1})
    assert created and not again_created
    assert again.id == first.id and again.payload == {"customer": "c1", "n": 1}
    assert (first.flow_mode, first.flow_key) == ("singleton", "c1")
    assert app.get(first.id).flow_key == "c1" and other.id != first.id
    claim_one(app)  # running or leased: still live
    assert app.submit("sync", {"customer": "c1", "n": 3}).id == first.id
    assert len(app.list(type="sync")) == 2


def test_a_finished_singleton_frees_its_key(app):
    register(app)
    first = app.submit("sync", {"customer": "c1"})
    app.cancel(first.id)
    second, created = app.submit_with_status("sync", {"customer": "c1"})
    assert created and second.id != first.id
    assert app.get(first.id).state == JobState.CANCELLED


def test_a_debounced_submit_replaces_the_pending_payload(app, clock):
    register(app)
    first, created = app.submit_with_status("reindex", {"doc": "d1", "v": 1})
    assert created and first.run_after.timestamp() == pytest.approx(clock.time() + 30)
    clock.advance(10)
    again, again_created = app.submit_with_status("reindex", {"doc": "d1", "v": 2})
    assert not again_created and again.id == first.id
    assert again.payload == {"doc": "d1", "v": 2}
    assert again.input_config_hash != first.input_config_hash
    assert again.run_after == first.run_after, "a replace does not push the start back"
    assert app.get(first.id).payload == {"doc": "d1", "v": 2}
    kinds = [(e.kind, e.data.get("flow_key")) for e in app.events(first.id)]
    assert kinds == [("submitted", "d1"), ("debounced", "d1")]
    assert app.store.claim("w", queues=None, limit=1, lease_ttl=30) == [], "held for its window"
    clock.advance(20)
    assert claim_one(app).payload == {"doc": "d1", "v": 2}
    later, created = app.submit_with_status("reindex", {"doc": "d1", "v": 3})
    assert created and later.id != first.id, "a claimed job is no longer pending"
    job = app.get(first.id)
    assert history_problems(job, app.events(job.id), app.attempts(job.id)) == []


def test_submit_overrides_the_type_and_unregistered_types_may_ask(app):
    register(app)
    a = app.submit("plain", {"x": 1}, singleton=True, flow_key="only")
    assert app.submit("plain", {"x": 2}, singleton=True, flow_key="only").id == a.id
    b = app.submit("sync", {"customer": "c9"}, singleton=False)
    assert app.submit("sync", {"customer": "c9"}, singleton=False).id != b.id
    c = app.submit("sync", {"customer": "c9"}, flow_key="chosen")
    assert c.flow_key == "chosen"
    d = app.submit("plain", {"x": 1}, debounce_s=5)
    assert (d.flow_mode, d.flow_key) == ("debounce", "")


def test_bad_declarations_and_arguments_are_refused(app):
    with pytest.raises(ConfigurationError):
        app.register("both", lambda ctx, p: p, singleton=True, debounce_s=3)
    with pytest.raises(ConfigurationError):
        app.register("keyonly", lambda ctx, p: p, flow_key="x")
    register(app)
    with pytest.raises(InvalidArgument):
        app.submit("sync", {"no_customer": 1})
    with pytest.raises(InvalidArgument, match="KeyError"):
        app.submit("reindex", {"no_doc": 1})
    with pytest.raises(InvalidArgument):
        app.submit("plain", {}, flow_key="k")
    with pytest.raises(InvalidArgument):
        app.submit("plain", {}, debounce_s=0)
    assert app.list() == []


def test_an_idempotency_key_still_names_its_job(app):
    register(app)
    a = app.submit("sync", {"customer": "c1"}, idempotency_key="k")
    app.cancel(a.id)
    assert app.submit("sync", {"customer": "c1"}, idempotency_key="k").id == a.id
    with pytest.raises(IdempotencyConflict):
        app.submit("sync", {"customer": "c2"}, idempotency_key="k")


def test_submit_many_counts_keys_within_and_across_the_batch(app):
    register(app)
    jobs = app.submit_many([
        {"type": "sync", "payload": {"customer": "a"}},
        {"type": "plain", "payload": 1},
        {"type": "sync", "payload": {"customer": "a", "n": 2}},
        {"type": "reindex", "payload": {"doc": "d", "v": 1}},
        {"type": "reindex", "payload": {"doc": "d", "v": 2}},
        {"type": "plain", "payload": 2},
    ])
    assert jobs[0].id == jobs[2].id and jobs[3].id == jobs[4].id
    assert jobs[4].payload == {"doc": "d", "v": 2}
    assert [j.payload for j in (jobs[1], jobs[5])] == [1, 2]
    assert len(app.list()) == 4


@pytest.mark.parametrize("kind", ["sync", "reindex"])
def test_concurrent_submitters_agree_on_one_job(database_url, clock, kind):
    """Many apps (each its own connections) submit one key at once: one job, and every
    submitter is answered with it."""
    apps = [Tether(database_url, clock=clock) for _ in range(8)]
    for a in apps:
        register(a)
    apps[0].migrate()
    field = "customer" if kind == "sync" else "doc"
    start = threading.Barrier(len(apps))
    answers: list = []
    errors: list = []

    def submit(a, n):
        try:
            start.wait()
            for i in range(5):
                answers.append(a.submit_with_status(kind, {field: "k", "n": n * 10 + i}))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=submit, args=(a, n)) for n, a in enumerate(apps)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert len({job.id for job, _ in answers}) == 1
        assert sum(created for _, created in answers) == 1
        jobs = apps[0].list(type=kind)
        assert len(jobs) == 1
        if kind == "reindex":
            assert len(apps[0].events(jobs[0].id)) == len(answers)
    finally:
        for a in apps:
            a.close()


def test_a_failed_singleton_is_not_retried_while_another_of_its_key_is_live(app):
    from tether.errors import JobStateError
    from tether.job import Lease
    from tether.worker.executor import execute

    @app.job("flaky", singleton=True, max_attempts=1)
    def flaky(ctx, payload):
        raise ValueError("boom")

    first = app.submit("flaky", {})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    assert app.get(first.id).state == JobState.FAILED
    second = app.submit("flaky", {})
    assert second.id != first.id, "a failed job is not live"
    for again in (app.retry, app.requeue):
        with pytest.raises(JobStateError, match=f"job {second.id} of that key is live"):
            again(first.id)
    assert app.get(first.id).state == JobState.FAILED
    app.cancel(second.id)
    assert app.retry(first.id).state == JobState.QUEUED


def test_a_fork_is_a_new_job_outside_flow_control(app):
    from tether.job import Lease
    from tether.worker.executor import execute

    @app.job("staged", singleton=True, flow_key="customer", stages=[lambda ctx, p: p])
    def staged(ctx, value):
        return value

    source = app.submit("staged", {"customer": "c1"})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    fork = app.fork(source.id, from_stage="staged", payload={"other": 1})
    assert (fork.flow_mode, fork.flow_key) == (None, None) and fork.id != source.id
    assert (app.get(fork.id).flow_mode, app.get(fork.id).flow_key) == (None, None)


def test_a_schedules_ticks_are_outside_flow_control(app, clock):
    register(app)
    app.schedule("hourly-sync", cron="0 * * * *", type="sync", payload={"no_customer": 1})
    first = app.run_schedules(now=clock.time() + 3600)
    second = app.run_schedules(now=clock.time() + 7200)
    assert len(first) == len(second) == 1 and first[0].id != second[0].id
    assert app.get(first[0].id).flow_mode is None
