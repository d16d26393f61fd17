"""Submission and idempotency: every backend."""

from datetime import datetime, timedelta, timezone

import pytest

from tether import IdempotencyConflict, InvalidPayload, JobState, UnknownJobType
from tether.errors import InvalidArgument


def register(app):
    @app.job("echo")
    def echo(ctx, payload):
        return payload


def snapshot(store):
    jobs = store.list_jobs(limit=1000)
    return [(j.id, j.state, j.updated_at) for j in jobs], sum(
        len(store.events(j.id)) for j in jobs)


def test_submit_records_a_queued_job_with_its_first_event(app):
    register(app)
    job = app.submit("echo", {"a": 1}, project="p1", priority=5)
    assert job.state == JobState.QUEUED and job.project == "p1" and job.priority == 5
    assert job.attempt_count == 0 and job.max_attempts == 3
    assert len(job.input_config_hash) == 64
    events = app.events(job.id)
    assert [(e.seq, e.kind, e.to_state) for e in events] == [(1, "submitted", "queued")]
    assert app.get(job.id).payload == {"a": 1}


def test_same_key_same_config_returns_existing(app):
    register(app)
    a = app.submit("echo", {"x": [1, 2]}, project="p", idempotency_key="k1")
    b = app.submit("echo", {"x": [1, 2]}, project="p", idempotency_key="k1")
    assert a.id == b.id
    assert len(app.list(project="p")) == 1


def test_key_order_in_payload_does_not_matter(app):
    register(app)
    a = app.submit("echo", {"x": 1, "y": 2}, idempotency_key="k")
    b = app.submit("echo", {"y": 2, "x": 1}, idempotency_key="k")
    assert a.id == b.id


def test_same_key_other_config_conflicts_and_changes_nothing(app):
    register(app)
    a = app.submit("echo", {"x": 1}, idempotency_key="k")
    before = snapshot(app.store)
    with pytest.raises(IdempotencyConflict) as info:
        app.submit("echo", {"x": 2}, idempotency_key="k")
    assert info.value.details["job_id"] == a.id
    assert snapshot(app.store) == before


def test_a_repeat_must_repeat_the_priority_on_every_submit_path(app):
    """The rule REST and MCP promise ("same body" includes the priority) is the facade's:
    the priority is part of the configuration an idempotency key is compared by."""
    register(app)
    a = app.submit("echo", {"x": 1}, idempotency_key="k", priority=5)
    assert app.submit("echo", {"x": 1}, idempotency_key="k", priority=5).id == a.id
    before = snapshot(app.store)
    for priority in (6, None):  # another priority, and none (the type's default, 0)
        with pytest.raises(IdempotencyConflict):
            app.submit("echo", {"x": 1}, idempotency_key="k", priority=priority)
        with pytest.raises(IdempotencyConflict):
            app.submit_with_status("echo", {"x": 1}, idempotency_key="k", priority=priority)
    job, created = app.submit_with_status("echo", {"x": 1}, idempotency_key="k", priority=5)
    assert (job.id, created) == (a.id, False)
    assert snapshot(app.store) == before


def test_keys_are_per_project(app):
    register(app)
    a = app.submit("echo", {}, project="p1", idempotency_key="k")
    b = app.submit("echo", {}, project="p2", idempotency_key="k")
    assert a.id != b.id


@pytest.mark.parametrize("bad", [
    {"type": "nope", "payload": {}},
    {"type": "echo", "payload": {"x": object()}},
    {"type": "echo", "payload": {"x": float("nan")}},
    {"type": "echo", "payload": {1: "non-string key"}},
    {"type": "echo", "payload": {}, "max_attempts": 0},
    {"type": "echo", "payload": {}, "priority": "high"},
    {"type": "echo", "payload": {}, "project": ""},
    {"type": "echo", "payload": {}, "budget": {"max_cost_usd": "lots"}},
    {"type": "echo", "payload": {}, "budget": {"max_cots_usd": 1}},
])
def test_bad_input_is_a_clear_error_and_the_store_is_unchanged(app, bad):
    bad = dict(bad)  # the parameter is shared by both backends' runs: never mutate it
    register(app)
    app.submit("echo", {"ok": True})
    before = snapshot(app.store)
    with pytest.raises((UnknownJobType, InvalidPayload, InvalidArgument)) as info:
        app.submit(bad.pop("type"), bad.pop("payload"), **bad)
    assert info.value.code in ("unknown_job_type", "invalid_payload", "invalid_argument")
    assert snapshot(app.store) == before


@pytest.mark.parametrize("option", [
    {"priority": 2**31}, {"priority": -2**31}, {"priority": 2**40}, {"priority": True},
    {"max_attempts": 2**31}, {"max_attempts": 0}, {"max_attempts": 3.0},
])
def test_a_priority_or_attempt_count_out_of_range_is_refused_alike(app, option):
    """Both are 32-bit integers in PostgreSQL: what it cannot hold, SQLite refuses too, with
    the same code and nothing stored, on a single submit and on a batch alike."""
    register(app)
    app.submit("echo", {"ok": True})
    before = snapshot(app.store)
    with pytest.raises(InvalidArgument) as info:
        app.submit("echo", {}, **option)
    assert info.value.code == "invalid_argument"
    assert info.value.details["argument"] == next(iter(option))
    with pytest.raises(InvalidArgument):
        app.submit_many([{"type": "echo", "payload": {"i": 1}},
                         {"type": "echo", "payload": {"i": 2}, **option}])
    assert snapshot(app.store) == before


def test_the_widest_priority_and_attempt_count_are_kept(app):
    register(app)
    high = app.submit("echo", {}, priority=2**31 - 1, max_attempts=2**31 - 1)
    low = app.submit_many([{"type": "echo", "payload": {}, "priority": -(2**31 - 1)}])[0]
    assert (app.get(high.id).priority, app.get(high.id).max_attempts) == (2**31 - 1, 2**31 - 1)
    assert app.get(low.id).priority == -(2**31 - 1)
    assert [c.job.id for c in app.store.claim("w", queues=None, limit=2, lease_ttl=30)
            ] == [low.id, high.id]


@pytest.mark.parametrize("run_after", [
    1e12, -1e12, float("inf"), float("nan"), 10**400,
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),  # before year 1 in UTC
])
def test_a_start_time_no_datetime_can_hold_is_refused_alike(app, run_after):
    """PostgreSQL refused some of these with a bare store error, SQLite with a ValueError: both
    now refuse every one before anything is written."""
    register(app)
    app.submit("echo", {"ok": True})
    before = snapshot(app.store)
    for submit in (lambda: app.submit("echo", {}, run_after=run_after),
                   lambda: app.submit_many([{"type": "echo"},
                                            {"type": "echo", "run_after": run_after}])):
        with pytest.raises(InvalidPayload, match="years 1 to 9999"):
            submit()
    assert snapshot(app.store) == before


def test_the_last_start_time_a_datetime_holds_is_kept(app):
    register(app)
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
    job = app.submit("echo", {}, run_after=end)
    assert app.get(job.id).run_after == end and app.list(limit=5)[0].run_after == end
    assert app.store.claim("w", queues=None, limit=1, lease_ttl=30) == []


def test_submit_many_is_all_or_nothing(app):
    register(app)
    jobs = app.submit_many([{"type": "echo", "payload": {"i": i}} for i in range(50)])
    assert len(jobs) == 50 and len({j.id for j in jobs}) == 50
    app.submit("echo", {"i": 0}, idempotency_key="taken")
    before = snapshot(app.store)
    with pytest.raises(IdempotencyConflict):
        app.submit_many([{"type": "echo", "payload": {"i": 1}},
                         {"type": "echo", "payload": {"i": 2}, "idempotency_key": "taken"}])
    assert snapshot(app.store) == before


def test_oversized_payload_rejected(app):
    register(app)
    with pytest.raises(InvalidPayload):
        app.submit("echo", {"blob": "x" * (9 * 1024 * 1024)})
