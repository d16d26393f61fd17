"""Schedules on every backend: each tick enqueues exactly one job (identity from name and
tick), by the store's clock; catch-up after downtime; pause, resume, delete; project scope.

Time is the ``app`` fixture's FakeClock (2026-01-01T00:00Z), which the store uses as its
clock; steps pass ``now=`` explicitly."""

from datetime import datetime, timezone

import pytest

from tether import Tether
from tether.errors import IdempotencyConflict, InvalidArgument, ScheduleNotFound

MIN = 60.0
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()


def keys(app, project="default"):
    return sorted(j.idempotency_key for j in app.list(project=project, limit=10_000))


@pytest.fixture
def nightly(app):
    @app.job("report", queue="reports", max_attempts=5)
    def report(ctx, payload):
        return payload
    return app


def test_a_tick_enqueues_one_job_as_the_schedule_resolved_it(nightly):
    app = nightly
    s = app.schedule("every-minute", cron="* * * * *", type="report", payload={"n": 1},
                     budget={"max_calls": 3})
    assert s.next_run_at.timestamp() == T0 + MIN and s.queue == "reports"
    assert app.run_schedules(now=T0 + MIN - 1) == []
    [job] = app.run_schedules(now=T0 + MIN)
    assert job.idempotency_key == "schedule:every-minute:2026-01-01T00:01:00Z"
    got = app.get(job.id)
    assert (got.type, got.payload, got.queue, got.max_attempts, got.project) == (
        "report", {"n": 1}, "reports", 5, "default")
    assert got.budget.limits.max_calls == 3
    assert app.run_schedules(now=T0 + MIN + 30) == []
    s = app.get_schedule("every-minute")
    assert s.next_run_at.timestamp() == T0 + 2 * MIN
    assert s.last_run_at.timestamp() == T0 + MIN and s.last_job_id == job.id


def test_two_stores_stepping_at_the_same_instants_make_one_job_per_tick(nightly, database_url):
    app = nightly
    app.schedule("m", cron="* * * * *", type="report")
    other = Tether(database_url)
    try:
        made = 0
        for i in range(1, 11):
            made += len(other.store.run_schedules(now=T0 + i * MIN))
            made += len(app.store.run_schedules(now=T0 + i * MIN))
        assert made == 10
        assert keys(app) == [f"schedule:m:2026-01-01T00:{i:02d}:00Z" for i in range(1, 11)]
    finally:
        other.close()


def test_a_job_already_holding_the_ticks_key_is_not_doubled(nightly):
    app = nightly
    app.schedule("m", cron="* * * * *", type="report", payload={"n": 1})
    app.submit("report", {"n": 1}, idempotency_key="schedule:m:2026-01-01T00:01:00Z")
    assert app.run_schedules(now=T0 + MIN) == []
    assert len(keys(app)) == 1
    assert app.get_schedule("m").next_run_at.timestamp() == T0 + 2 * MIN
    # the schedule's own job for that tick: submitting it with another payload conflicts
    with pytest.raises(IdempotencyConflict):
        app.submit("report", {"n": 2}, idempotency_key="schedule:m:2026-01-01T00:01:00Z")


@pytest.mark.parametrize("mode, expected", [
    ("latest", ["00:06"]),
    ("all", ["00:02", "00:03", "00:04", "00:05", "00:06"]),
    ("none", []),
])
def test_a_restart_after_downtime_obeys_catch_up(nightly, mode, expected):
    app = nightly
    app.schedule("s", cron="* * * * *", type="report", catch_up=mode)
    assert len(app.run_schedules(now=T0 + MIN)) == 1          # 00:01 on time
    made = app.run_schedules(now=T0 + 6 * MIN + 45)            # down through 00:02..00:06
    assert sorted(j.idempotency_key[-9:-4] for j in made) == expected
    assert app.get_schedule("s").next_run_at.timestamp() == T0 + 7 * MIN
    assert len(app.run_schedules(now=T0 + 7 * MIN)) == 1      # and on time again after
    assert len(keys(app)) == 2 + len(expected)


def test_catch_up_all_is_bounded_per_step_and_finishes_in_the_next(nightly):
    app = nightly
    app.schedule("s", cron="* * * * *", type="report", catch_up="all")
    first = app.store.run_schedules(now=T0 + 10 * MIN, max_ticks=4)
    assert len(first) == 4
    assert app.get_schedule("s").next_run_at.timestamp() == T0 + 5 * MIN  # still due
    rest = app.store.run_schedules(now=T0 + 10 * MIN, max_ticks=4)
    assert len(rest) == 4
    last = app.store.run_schedules(now=T0 + 10 * MIN, max_ticks=4)
    assert len(last) == 2
    assert len(keys(app)) == 10 and len(set(keys(app))) == 10


def test_pause_enqueues_nothing_and_resume_skips_the_ticks_of_the_pause(nightly, clock):
    app = nightly
    app.schedule("s", cron="* * * * *", type="report", catch_up="all")
    s = app.pause_schedule("s")
    assert s.paused and s.next_run_at is None
    assert app.pause_schedule("s").paused  # pausing again changes nothing
    assert app.run_schedules(now=T0 + 5 * MIN) == []
    clock.set(T0 + 5 * MIN + 10)
    s = app.resume_schedule("s")
    assert not s.paused and s.next_run_at.timestamp() == T0 + 6 * MIN
    assert app.run_schedules(now=T0 + 5 * MIN + 20) == []
    assert [j.idempotency_key[-9:-4] for j in app.run_schedules(now=T0 + 6 * MIN)] == ["00:06"]


def test_redefining_keeps_the_next_run_unless_the_cron_or_zone_changes(nightly, clock):
    app = nightly
    app.schedule("s", cron="0 3 * * *", timezone="Europe/Berlin", type="report")
    clock.advance(3600)
    s = app.schedule("s", cron="0 3 * * *", timezone="Europe/Berlin", type="report",
                     payload={"v": 2}, catch_up="none")
    assert s.next_run_at == datetime(2026, 1, 1, 2, tzinfo=timezone.utc)
    assert s.payload == {"v": 2} and s.catch_up == "none"
    s = app.schedule("s", cron="0 3 * * *", timezone="America/New_York", type="report")
    assert s.next_run_at == datetime(2026, 1, 1, 8, tzinfo=timezone.utc)
    assert len(app.schedules()) == 1


def test_delete_and_not_found(nightly):
    app = nightly
    app.schedule("s", cron="* * * * *", type="report")
    assert app.delete_schedule("s").name == "s"
    assert app.schedules() == []
    assert app.run_schedules(now=T0 + MIN) == []
    for action in (app.get_schedule, app.pause_schedule, app.resume_schedule,
                   app.delete_schedule):
        with pytest.raises(ScheduleNotFound):
            action("s")


@pytest.mark.parametrize("args", [
    {"cron": "0 3 * *"}, {"cron": "0 0 30 2 *"}, {"timezone": "Nowhere/City"},
    {"catch_up": "sometimes"}, {"name": "has space"}, {"name": ""}, {"project": ""},
])
def test_bad_definitions_are_invalid_argument_and_store_nothing(nightly, args):
    app = nightly
    kwargs = {"name": "s", "cron": "* * * * *", "type": "report", **args}
    with pytest.raises(InvalidArgument):
        app.schedule(kwargs.pop("name"), **kwargs)
    assert app.schedules() == []


def test_project_scope_hides_other_projects_schedules(nightly):
    app = nightly
    app.schedule("a", cron="* * * * *", type="report", project="p1")
    app.schedule("b", cron="* * * * *", type="report", project="p2")
    assert [s.name for s in app.schedules(projects=["p1"])] == ["a"]
    assert [s.name for s in app.schedules(project="p2")] == ["b"]
    with pytest.raises(ScheduleNotFound):
        app.get_schedule("b", projects=["p1"])
    with pytest.raises(ScheduleNotFound):
        app.pause_schedule("b", projects=["p1"])
    with pytest.raises(InvalidArgument):
        app.schedule("b", cron="* * * * *", type="report", project="p1", projects=["p1"])
    made = app.run_schedules(now=T0 + MIN)
    assert sorted(j.project for j in made) == ["p1", "p2"]


def test_a_worker_step_runs_the_scheduler(nightly):
    app = nightly
    app.schedule("s", cron="* * * * *", type="report")
    worker = app.worker(concurrency=1, poll_interval=0.01)
    try:
        assert worker.scheduler.run_once(now=T0 + MIN)[0].idempotency_key.endswith("00:01:00Z")
        assert worker.scheduler.run_once(now=T0 + MIN) == []
    finally:
        worker._drain()


def test_the_worker_loop_step_runs_the_scheduler_by_the_store_clock(nightly, clock):
    app = nightly
    app.schedule("s", cron="* * * * *", type="report")
    worker = app.worker(concurrency=1, poll_interval=0.01, schedule_interval=1.0)
    quiet = app.worker(concurrency=1, poll_interval=0.01, schedule_interval=None)
    try:
        clock.advance(MIN)
        quiet.run_once()
        assert keys(app) == []
        worker.run_once()  # claims nothing yet, then the scheduler step enqueues the tick
        assert keys(app) == ["schedule:s:2026-01-01T00:01:00Z"]
        clock.advance(0.5)
        worker.run_once()  # the next scheduler step is not due for another half second
        clock.advance(MIN)
        worker.run_once()
        assert len(keys(app)) == 2
    finally:
        worker._drain()
        quiet._drain()


def test_concurrent_first_definitions_of_one_name_make_one_schedule(nightly, database_url):
    """Four stores (their connections open) define the same new names at once behind a
    barrier, ten rounds: each name is created once and redefined three times, no error."""
    import threading

    apps = [Tether(database_url) for _ in range(4)]
    for a in apps:
        a.schedules()
    rounds = 10
    results: list = []
    errors: list = []
    barrier = threading.Barrier(len(apps))

    def define(i):
        for r in range(rounds):
            try:
                barrier.wait()
                results.append(apps[i].schedule_with_status(
                    f"race-{r}", cron="* * * * *", type="report", payload={"by": i}))
            except Exception as exc:  # noqa: BLE001 - any error fails the test below
                errors.append(exc)
    threads = [threading.Thread(target=define, args=(i,)) for i in range(len(apps))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for a in apps:
            a.close()
    assert errors == []
    for r in range(rounds):
        mine = [created for s, created in results if s.name == f"race-{r}"]
        assert sorted(mine) == [False, False, False, True]
    assert len(nightly.schedules()) == rounds
