"""A worker claims only the job types its app registers; a queued job whose type no live worker
serves stays queued and is reported unserved. Both backends, the injected clock, no sleeps."""

from datetime import UTC, datetime

import pytest

from tether import JobState, Tether

S = JobState


@pytest.fixture
def other(app, database_url, clock):
    """A second app on ``app``'s database: ``app`` registers ``a``, this one ``b``."""
    @app.job("a")
    def a(ctx, payload):
        return "a"

    second = Tether(database_url, clock=clock)

    @second.job("b")
    def b(ctx, payload):
        return "b"

    yield second
    second.close()


def test_a_claim_takes_only_the_types_it_names(app, other):
    jobs = [app.submit("a", {}), other.submit("b", {}), app.submit("a", {}),
            other.submit("b", {})]
    mine = app.store.claim("wa", queues=None, types=["a"], limit=10, lease_ttl=30)
    assert [c.job.id for c in mine] == [jobs[0].id, jobs[2].id]
    assert app.store.claim("wa", queues=None, types=["a"], limit=10, lease_ttl=30) == []
    assert app.store.claim("wx", queues=None, types=[], limit=10, lease_ttl=30) == []
    theirs = other.store.claim("wb", queues=["default"], types=["b", "c"], limit=10,
                               lease_ttl=30)
    assert [c.job.id for c in theirs] == [jobs[1].id, jobs[3].id]


def test_two_apps_workers_each_run_only_their_own_types(app, other):
    a, b = app.submit("a", {}), other.submit("b", {})
    wa = app.worker(concurrency=1, schedule_interval=None, group_commit=False)
    wa.run(install_signals=False, stop_when_idle=True)
    assert app.get(a.id).state == S.SUCCEEDED and app.get(a.id).result == "a"
    assert app.get(b.id).state == S.QUEUED and app.get(b.id).attempt_count == 0
    wb = other.worker(concurrency=1, schedule_interval=None, group_commit=False)
    wb.run(install_signals=False, stop_when_idle=True)
    assert app.get(b.id).state == S.SUCCEEDED and app.get(b.id).result == "b"
    (attempt,) = app.attempts(b.id)
    assert attempt.worker_id == wb.id
    assert {w.id: w.types for w in app.workers(include_stopped=True)} == {  # every worker
        wa.id: ["a", "tether.webhook"], wb.id: ["b", "tether.webhook"]}  # delivers webhooks


def test_a_job_no_live_worker_serves_is_unserved_until_one_starts(app, other):
    a, b = app.submit("a", {}), other.submit("b", {})
    assert app.unserved([app.get(a.id), app.get(b.id)]) == {a.id, b.id}
    assert app.unserved_counts() == {("default", "a", ""): 1, ("default", "b", ""): 1}
    wa = app.worker(concurrency=1, schedule_interval=None, lease_ttl=30)
    wa.run_once()  # registers, claims a
    assert app.unserved([app.get(b.id)]) == {b.id}
    assert app.unserved_counts() == {("default", "b", ""): 1}
    assert app.unserved([app.get(a.id)]) == set()  # not queued any more
    wb = other.worker(concurrency=1, schedule_interval=None, lease_ttl=30,
                      queues=["bulk"])
    wb._register()  # serves b, but on another queue
    assert app.unserved_counts() == {("default", "b", ""): 1}
    wb2 = other.worker(concurrency=1, schedule_interval=None, lease_ttl=30)
    wb2._register()
    assert app.unserved([app.get(b.id)]) == set() and app.unserved_counts() == {}
    wa.stop()
    wa._drain()


def test_live_means_not_stopped_and_heard_from_within_its_lease_ttl(app, clock):
    @app.job("a")
    def a(ctx, payload):
        return None

    job = app.submit("a", {})
    w = app.worker(concurrency=1, schedule_interval=None, lease_ttl=10)
    w._register()
    assert app.unserved([app.get(job.id)]) == set()
    clock.advance(10)
    assert app.serving().serves("a", "default")
    clock.advance(0.5)  # silent longer than its lease TTL: presumed gone
    assert app.unserved([app.get(job.id)]) == {job.id}
    app.store.heartbeat(w.id, lease_ttl=10)
    assert app.unserved([app.get(job.id)]) == set()
    app.store.stop_worker(w.id)
    assert app.unserved([app.get(job.id)]) == {job.id}


def test_a_worker_row_from_before_types_were_recorded_serves_every_type(app, clock, backend):
    """A worker of the previous release claims every type: its row has no types, and it is
    live for the default lease TTL."""
    @app.job("a")
    def a(ctx, payload):
        return None

    job = app.submit("a", {})
    mark = "?" if backend == "sqlite" else "%s"
    at = clock.time() if backend == "sqlite" else datetime.fromtimestamp(clock.time(), UTC)
    with app.store._write() as tx:
        tx.conn.execute(
            "INSERT INTO workers (id, hostname, pid, queues, concurrency, started_at, "
            f"last_heartbeat_at) VALUES ({', '.join([mark] * 7)})",
            ("old", "h", 1, '["*"]', 1, at, at))
    assert app.unserved([app.get(job.id)]) == set()
    clock.advance(30.5)
    assert app.unserved([app.get(job.id)]) == {job.id}


def test_a_type_registered_after_the_worker_started_is_claimed_and_recorded(app, clock):
    @app.job("a")
    def a(ctx, payload):
        return None

    w = app.worker(concurrency=1, schedule_interval=None)
    w._register()

    @app.job("late")
    def late(ctx, payload):
        return "late"

    job = app.submit("late", {})
    w.run(install_signals=False, stop_when_idle=True)
    assert app.get(job.id).state == S.SUCCEEDED
    (info,) = app.workers(include_stopped=True)
    assert info.types == ["a", "late", "tether.webhook"] and info.lease_ttl == w.lease_ttl
