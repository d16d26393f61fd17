"""Operator control and the event log."""

import pytest

from tether import JobNotFound, JobState, JobStateError
from tether.store.base import Outcome

S = JobState


def register(app):
    @app.job("t")
    def t(ctx, payload):
        return payload


def test_cancel_queued_at_once_and_terminal_stays_terminal(app):
    register(app)
    job = app.submit("t", {})
    j = app.cancel(job.id, reason="not needed")
    assert j.state == S.CANCELLED and j.error_code == "cancelled"
    before = app.events(job.id)
    for action in (app.cancel, app.pause, app.resume, app.retry, app.requeue):
        with pytest.raises(JobStateError):
            action(job.id)
    assert app.events(job.id) == before
    assert app.store.claim("w", queues=None, limit=5, lease_ttl=30) == []


def test_pause_and_resume_queued(app):
    register(app)
    job = app.submit("t", {})
    assert app.pause(job.id).state == S.PAUSED
    assert app.store.claim("w", queues=None, limit=5, lease_ttl=30) == []
    assert app.resume(job.id).state == S.QUEUED
    assert len(app.store.claim("w", queues=None, limit=5, lease_ttl=30)) == 1


def test_retry_only_from_failed(app):
    register(app)
    job = app.submit("t", {}, max_attempts=1)
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, c.attempt)
    app.store.finish(job.id, c.attempt, Outcome(S.FAILED, error_code="boom", error_summary="x"))
    j = app.retry(job.id)
    assert j.state == S.QUEUED and j.max_attempts == 2 and j.error_code is None
    (c2,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    assert c2.attempt == 2


def test_unknown_job_and_project_scoping(app):
    register(app)
    job = app.submit("t", {}, project="p1")
    with pytest.raises(JobNotFound):
        app.get(999999)
    with pytest.raises(JobNotFound):
        app.cancel(job.id, projects=["p2"])
    assert app.get(job.id).state == S.QUEUED
    assert app.cancel(job.id, projects=["p1"]).state == S.CANCELLED


def test_events_are_gap_free_and_follow_the_state_machine(app, clock):
    register(app)
    job = app.submit("t", {})
    for _ in range(2):
        (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
        app.store.start(job.id, c.attempt)
        app.store.append_event(job.id, "note", {"i": 1}, attempt=c.attempt)
        app.store.finish(job.id, c.attempt, Outcome(S.RETRY_WAIT, error_code="transient",
                                                  error_summary="x", delay_s=1))
        clock.advance(2)
        app.store.promote_due()
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, c.attempt)
    app.store.finish(job.id, c.attempt, Outcome(S.SUCCEEDED, result_json="{}"))
    events = app.events(job.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    state = None
    from tether.core.states import can_transition
    for e in events:
        if e.to_state is None:
            continue
        if state is not None:
            assert can_transition(state, e.to_state), (state, e.to_state)
        state = e.to_state
    assert state == "succeeded"
    assert [a.outcome for a in app.attempts(job.id)] == ["retry_wait", "retry_wait", "succeeded"]
    assert app.events(job.id, after=3)[0].seq == 4


def test_set_budget_merges_limits(app):
    register(app)
    job = app.submit("t", {}, budget={"max_cost_usd": "1.50", "max_calls": 10})
    j = app.set_budget(job.id, max_cost_usd=3)
    assert str(j.budget.max_cost_usd) == "3" and j.budget.max_calls == 10
    assert app.events(job.id)[-1].kind == "budget_changed"


def test_tokens_are_stored_hashed_and_revocable(app):
    info, raw = app.store.create_token(name="ci", projects=["p1", "p2"], admin=False)
    assert raw.startswith("tth_") and info.projects == ("p1", "p2")
    got = app.store.resolve_token(raw)
    assert got.id == info.id and got.allows("p1") and not got.allows("p3")
    assert app.store.resolve_token(raw + "x") is None
    assert app.store.revoke_token(info.id) is True
    assert app.store.resolve_token(raw) is None
    assert [t.id for t in app.store.list_tokens()] == [info.id]


def test_engine_stats_count_claims_expiries_and_latency(app, clock):
    register(app)
    a = app.submit("t", {})
    app.submit("t", {})
    clock.advance(2)
    app.store.claim("w", queues=None, limit=2, lease_ttl=30)
    clock.advance(31)
    app.store.expire_leases()
    stats = app.engine_stats()
    assert stats["claims_total"] == 2 and stats["lease_expiries_total"] == 2
    lat = stats["claim_latency_seconds"]
    assert lat["count"] == 2 and abs(lat["sum"] - 4.0) < 0.01, lat
    assert lat["buckets"][1.0] == 0 and lat["buckets"][2.5] == 2
    assert app.events(a.id)[-1].kind == "lease_expired"
