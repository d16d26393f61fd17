"""Claims, leases, fencing, heartbeats and expiry — with the injected clock, never sleeping."""

import pytest

from tether import JobState, LeaseLost
from tether.store.base import Outcome

S = JobState


def register(app, safe=True):
    @app.job("t", safe_to_retry=safe, max_attempts=3)
    def t(ctx, payload):
        return payload


def test_claim_order_is_priority_then_run_after_then_id(app, clock):
    register(app)
    now = clock.time()
    late = app.submit("t", {"n": "late"}, run_after=now - 10)
    low = app.submit("t", {"n": "low"}, priority=5, run_after=now - 100)
    early = app.submit("t", {"n": "early"}, run_after=now - 50)
    future = app.submit("t", {"n": "future"}, run_after=now + 60)
    tie_a = app.submit("t", {"n": "a"}, run_after=now - 10)
    claims = app.store.claim("w1", queues=None, limit=10, lease_ttl=30)
    assert [c.job.id for c in claims] == [early.id, late.id, tie_a.id, low.id]
    assert future.id not in [c.job.id for c in claims]
    clock.advance(61)
    assert [c.job.id for c in app.store.claim("w1", queues=None, limit=10, lease_ttl=30)] == [
        future.id]


def test_claim_counts_the_attempt_and_sets_the_lease(app, clock):
    register(app)
    job = app.submit("t", {})
    (claim,) = app.store.claim("w1", queues=None, limit=5, lease_ttl=30)
    j = app.get(job.id)
    assert j.state == S.LEASED and j.attempt_count == 1 and claim.attempt == 1
    assert j.lease_owner == "w1"
    assert j.lease_expires_at.timestamp() == pytest.approx(clock.time() + 30)
    (attempt,) = app.attempts(job.id)
    assert attempt.worker_id == "w1" and attempt.attempt == 1
    assert app.store.claim("w2", queues=None, limit=5, lease_ttl=30) == []


def test_queues_filter_and_paused_queue_is_skipped(app):
    register(app)
    a = app.submit("t", {}, queue="a")
    b = app.submit("t", {}, queue="b")
    app.pause_queue("a")
    assert [c.job.id for c in app.store.claim("w", queues=None, limit=9, lease_ttl=30)] == [b.id]
    app.resume_queue("a")
    assert app.store.claim("w", queues=["b"], limit=9, lease_ttl=30) == []
    assert [c.job.id for c in app.store.claim("w", queues=["a"], limit=9, lease_ttl=30)] == [a.id]
    info = {q.name: q for q in app.queues()}
    assert info["a"].paused is False and info["a"].counts == {"leased": 1}


def test_heartbeat_renews_all_leases_in_one_call(app, clock):
    register(app)
    for _ in range(3):
        app.submit("t", {})
    claims = app.store.claim("w1", queues=None, limit=5, lease_ttl=30)
    clock.advance(20)
    renewed = app.store.heartbeat("w1", lease_ttl=30)
    assert set(renewed) == {c.job.id for c in claims}
    clock.advance(20)  # 40 s after claim, 20 s after the heartbeat
    assert app.store.expire_leases() == []
    clock.advance(11)
    assert len(app.store.expire_leases()) == 3


def test_expired_running_job_requeues_when_safe(app, clock):
    register(app, safe=True)
    job = app.submit("t", {})
    (c,) = app.store.claim("w1", queues=None, limit=1, lease_ttl=30)
    assert app.store.start(job.id, c.attempt) == S.RUNNING
    clock.advance(31)
    assert app.store.expire_leases() == [(job.id, S.QUEUED)]
    j = app.get(job.id)
    assert j.state == S.QUEUED and j.lease_owner is None
    kinds = [e.kind for e in app.events(job.id)]
    assert kinds == ["submitted", "leased", "running", "lease_expired"]
    (a,) = app.attempts(job.id)
    assert a.outcome == "lease_expired" and a.error_code == "interrupted"


def test_expired_running_job_is_interrupted_when_not_safe(app, clock):
    register(app, safe=False)
    job = app.submit("t", {})
    (c,) = app.store.claim("w1", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, c.attempt)
    clock.advance(31)
    assert app.store.expire_leases() == [(job.id, S.INTERRUPTED)]
    assert app.get(job.id).error_code == "interrupted"
    assert app.requeue(job.id).state == S.QUEUED


def test_expired_before_start_goes_back_to_queued_even_when_not_safe(app, clock):
    register(app, safe=False)
    job = app.submit("t", {})
    app.store.claim("w1", queues=None, limit=1, lease_ttl=30)
    clock.advance(31)
    assert app.store.expire_leases() == [(job.id, S.QUEUED)]


def test_crash_loop_is_bounded_by_max_attempts(app, clock):
    register(app, safe=True)
    job = app.submit("t", {})
    for attempt in (1, 2, 3):
        (c,) = app.store.claim(f"w{attempt}", queues=None, limit=1, lease_ttl=30)
        assert c.attempt == attempt
        app.store.start(job.id, c.attempt)
        clock.advance(31)
        app.store.expire_leases()
    j = app.get(job.id)
    assert j.state == S.FAILED and j.error_code == "interrupted" and j.attempt_count == 3
    assert app.store.claim("w9", queues=None, limit=1, lease_ttl=30) == []


def test_a_stale_token_can_write_nothing(app, clock):
    register(app)
    job = app.submit("t", {})
    (old,) = app.store.claim("zombie", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, old.attempt)
    clock.advance(31)
    app.store.expire_leases()
    (new,) = app.store.claim("w2", queues=None, limit=1, lease_ttl=30)
    assert new.attempt == 2
    events_before = len(app.events(job.id))
    with pytest.raises(LeaseLost):
        app.store.finish(job.id, old.attempt, Outcome(S.SUCCEEDED, result_json='"zombie"'))
    with pytest.raises(LeaseLost):
        app.store.set_stage(job.id, old.attempt, "zombie-stage")
    with pytest.raises(LeaseLost):
        app.store.append_event(job.id, "zombie", {}, attempt=old.attempt)
    assert app.store.heartbeat("zombie", lease_ttl=30) == {}
    j = app.get(job.id)
    assert j.state == S.LEASED and j.lease_owner == "w2" and j.stage is None
    assert len(app.events(job.id)) == events_before
    app.store.start(job.id, new.attempt)
    assert app.store.finish(job.id, new.attempt, Outcome(S.SUCCEEDED, result_json='"ok"')) == (
        S.SUCCEEDED)
    assert app.get(job.id).result == "ok"


def test_retry_wait_then_queued_when_backoff_elapses(app, clock):
    register(app)
    job = app.submit("t", {})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, c.attempt)
    app.store.finish(job.id, c.attempt, Outcome(S.RETRY_WAIT, error_code="transient",
                                              error_summary="429", delay_s=8))
    j = app.get(job.id)
    assert j.state == S.RETRY_WAIT and j.run_after.timestamp() == pytest.approx(clock.time() + 8)
    assert app.store.promote_due() == 0
    clock.advance(7.9)
    assert app.store.promote_due() == 0
    clock.advance(0.2)
    assert app.store.promote_due() == 1
    assert app.get(job.id).state == S.QUEUED


def test_finish_after_cancel_ends_cancelled(app):
    register(app)
    job = app.submit("t", {})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, c.attempt)
    assert app.cancel(job.id).state == S.CANCELLING
    assert app.store.finish(job.id, c.attempt, Outcome(S.SUCCEEDED, result_json="1")) == S.CANCELLED
    j = app.get(job.id)
    assert j.state == S.CANCELLED and j.error_code == "cancelled"


def test_cancel_between_claim_and_start(app):
    register(app)
    job = app.submit("t", {})
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    assert app.cancel(job.id).state == S.CANCELLING
    assert app.store.start(job.id, c.attempt) == S.CANCELLING


def test_dead_workers_cancelling_and_pausing_jobs_settle(app, clock):
    register(app)
    a, b = app.submit("t", {}), app.submit("t", {})
    for c in app.store.claim("w", queues=None, limit=2, lease_ttl=30):
        app.store.start(c.job.id, c.attempt)
    app.cancel(a.id)
    app.pause(b.id)
    clock.advance(31)
    assert dict(app.store.expire_leases()) == {a.id: S.CANCELLED, b.id: S.PAUSED}


def test_worker_clock_does_not_matter_only_the_store_clock(app, clock):
    """Leases are judged by the store's 'now' (here the injected clock), never a caller's."""
    register(app)
    job = app.submit("t", {})
    app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    clock.advance(29)
    assert app.store.expire_leases() == []
    assert app.get(job.id).state == S.LEASED


def test_finish_many_writes_a_batch_and_reports_lost_leases_in_place(app, clock):
    register(app)
    jobs = [app.submit("t", {"n": i}) for i in range(3)]
    claims = app.store.claim("w", queues=None, limit=3, lease_ttl=30, start=True)
    assert all(c.started for c in claims) and [c.job.id for c in claims] == [j.id for j in jobs]
    stale = claims[1]
    results = app.store.finish_many([
        (claims[0].job.id, claims[0].attempt, Outcome(S.SUCCEEDED, result_json="0")),
        (stale.job.id, stale.attempt + 5, Outcome(S.SUCCEEDED, result_json="1")),
        (claims[2].job.id, claims[2].attempt, Outcome(S.FAILED, error_code="x",
                                                    error_summary="boom")),
    ])
    assert results[0] == S.SUCCEEDED and isinstance(results[1], LeaseLost)
    assert results[2] == S.FAILED
    assert [app.get(j.id).state for j in jobs] == [S.SUCCEEDED, S.RUNNING, S.FAILED]
    assert [e.kind for e in app.events(jobs[0].id)] == ["submitted", "leased", "running",
                                                         "succeeded"]


def test_finish_many_of_successes_writes_those_it_can_and_reports_the_rest(app, clock):
    """A batch of plain successes (one statement where the backend can) with a lost lease in
    the middle: the others succeed with their events and attempt rows, the lost one is
    reported in its slot and its job is left as it was."""
    register(app)
    jobs = [app.submit("t", {"n": i}) for i in range(3)]
    claims = app.store.claim("w", queues=None, limit=3, lease_ttl=30, start=True)
    clock.advance(2)
    results = app.store.finish_many([
        (c.job.id, c.attempt + (5 if i == 1 else 0), Outcome(S.SUCCEEDED, result_json=str(i)))
        for i, c in enumerate(claims)])
    assert results[0] == S.SUCCEEDED and results[2] == S.SUCCEEDED
    assert isinstance(results[1], LeaseLost)
    assert [app.get(j.id).state for j in jobs] == [S.SUCCEEDED, S.RUNNING, S.SUCCEEDED]
    done = app.get(jobs[2].id)
    assert done.result == 2 and done.finished_at.timestamp() == pytest.approx(clock.time())
    assert [e.kind for e in app.events(jobs[2].id)][-1] == "succeeded"
    (attempt,) = app.store.attempts(jobs[2].id)
    assert attempt.outcome == "succeeded"
    assert attempt.finished_at.timestamp() == pytest.approx(clock.time())
