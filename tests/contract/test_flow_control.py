"""Flow control at claim time, on both backends: a paused job type is never claimed, and a
concurrency limit (per key, and in total) holds across claims, counting only the jobs that
hold a slot. docs/flow-control.md cites these tests."""

import pytest

from tether import JobState
from tether.errors import InvalidArgument, UnknownJobType
from tether.store.base import Outcome


def register(app):
    for name in ("t", "u"):
        @app.job(name, max_attempts=3)
        def fn(ctx, payload):
            return payload


def claim(app, limit=50, worker="w"):
    return [c.job.id for c in app.store.claim(worker, queues=None, limit=limit, lease_ttl=30,
                                                 start=True)]


def test_a_paused_type_is_never_claimed_and_resumes(app):
    register(app)
    t = [app.submit("t", {"i": i}).id for i in range(3)]
    u = app.submit("u", {}).id
    running = claim(app, limit=1)
    assert running == [t[0]]
    info = app.pause_type("t")
    assert info.paused and info.counts == {"queued": 2, "running": 1}
    assert claim(app) == [u]
    assert claim(app) == []
    app.store.finish(t[0], 1, Outcome(JobState.SUCCEEDED, result_json="{}"))
    assert app.get(t[0]).state == JobState.SUCCEEDED  # a running job of the type finishes
    assert {x.name: x.paused for x in app.job_types()} == {"t": True, "u": False}
    app.resume_type("t")
    assert claim(app) == t[1:]


def test_pausing_an_unknown_type_is_refused(app):
    register(app)
    with pytest.raises(UnknownJobType):
        app.pause_type("nope")
    assert [x.name for x in app.job_types()] == ["t", "u"]


def test_per_key_limit_by_project_holds_within_and_across_claims(app):
    register(app)
    a = [app.submit("t", {}, project="a").id for _ in range(4)]
    b = [app.submit("t", {}, project="b").id for _ in range(4)]
    app.set_flow_limit("type", "t", per_key=2)
    assert claim(app) == [a[0], b[0], a[1], b[1]]  # in claim order: the projects in turn
    assert claim(app) == []
    app.store.finish(a[0], 1, Outcome(JobState.SUCCEEDED, result_json="{}"))
    assert claim(app) == [a[2]]
    usage = {(u.key, u.running, u.limit) for u in app.flow_usage()}
    assert usage == {(None, 4, None), ("a", 2, 2), ("b", 2, 2)}


def test_per_key_limit_by_payload_field_and_a_queue_total(app):
    register(app)
    ids = [app.submit("t", {"customer": c}, queue="q").id for c in (1, 1, 1, 2, 2, 3)]
    other = app.submit("u", {}, queue="q").id
    app.set_flow_limit("queue", "q", per_key=1, key="customer", total=3)
    assert claim(app, limit=2) == [ids[0], ids[3]]
    assert claim(app) == [ids[5]]  # the total (3) is reached: nothing else, not even u
    app.set_flow_limit("queue", "q", per_key=1, key="customer")
    assert claim(app) == [other]
    assert app.clear_flow_limit("queue", "q") and not app.clear_flow_limit("queue", "q")
    assert claim(app) == [ids[1], ids[2], ids[4]]


def test_a_lowered_limit_lets_running_jobs_finish_and_claims_wait(app):
    register(app)
    ids = [app.submit("t", {}).id for _ in range(4)]
    assert claim(app, limit=3) == ids[:3]
    app.set_flow_limit("type", "t", total=1)
    assert claim(app) == []
    for job_id in ids[:3]:
        app.store.finish(job_id, 1, Outcome(JobState.SUCCEEDED, result_json="{}"))
    assert claim(app) == [ids[3]]


def test_waiting_and_retry_waiting_jobs_hold_no_slot(app, clock):
    register(app)
    ids = [app.submit("t", {}).id for _ in range(3)]
    app.set_flow_limit("type", "t", per_key=1)
    assert claim(app) == [ids[0]]
    app.store.finish(ids[0], 1, Outcome(JobState.RETRY_WAIT, delay_s=60,
                                        error_code="x", error_summary="x"))
    assert claim(app) == [ids[1]]
    assert [u.running for u in app.flow_usage() if u.key is not None] == [1]


@pytest.mark.parametrize("kwargs", [{}, {"per_key": 0}, {"total": True},
                                    {"per_key": 2**31}, {"per_key": 1, "key": "a.b"}])
def test_invalid_limits_are_refused(app, kwargs):
    with pytest.raises(InvalidArgument):
        app.set_flow_limit("type", "t", **kwargs)
    with pytest.raises(InvalidArgument):
        app.set_flow_limit("project", "t", per_key=1)
    assert app.flow_limits() == []
