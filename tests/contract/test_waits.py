"""Waits on every backend: gather, timers and signals hold no lease, wake from durable rows by
the store's clock, and replay to the wait with its recorded value (injected clock, no sleeps)."""

from datetime import UTC, datetime, timedelta

import pytest

from tether import ChildFailure, JobState, JobStateError, PolicyBlock
from tether.job import Lease
from tether.worker.executor import execute


def run_next(app):
    """Claim and run the next queued job; returns it as it ended (None: nothing queued)."""
    claims = app.store.claim("w", queues=None, limit=1, lease_ttl=3600)
    if not claims:
        return None
    (c,) = claims
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(c.job.id)


def kinds(app, job_id):
    return [e.kind for e in app.events(job_id)]


def assert_parked(app, job_id):
    job = app.get(job_id)
    assert job.state == JobState.WAITING
    assert job.lease_owner is None and job.lease_attempt is None and job.lease_expires_at is None


def test_sleep_waits_by_the_store_clock_without_a_lease(app, clock):
    runs = []

    @app.job("nap")
    def nap(ctx, payload):
        runs.append(ctx.attempt)
        ctx.sleep(60)
        return "rested"
    job = app.submit("nap")
    run_next(app)
    assert_parked(app, job.id)
    assert run_next(app) is None, "a waiting job is not claimable"
    clock.advance(59)
    assert app.store.wake_due() == 0
    assert_parked(app, job.id)
    clock.advance(1)
    assert app.store.wake_due() == 1
    assert app.get(job.id).state == JobState.QUEUED
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result == "rested"
    assert runs == [1, 2]
    assert done.attempt_count == 2 and done.max_attempts >= 3 + 1
    assert ["wait", "waiting", "woken"] == [k for k in kinds(app, job.id)
                                            if k in ("wait", "waiting", "woken")]
    (w,) = app.waits(job.id)
    assert (w.kind, w.status, w.outcome) == ("timer", "done", "fired")


def test_a_replayed_sleep_keeps_its_first_deadline(app, clock):
    @app.job("nap2")
    def nap2(ctx, payload):
        ctx.sleep(100)
        ctx.sleep(100)
        return "ok"
    job = app.submit("nap2")
    run_next(app)
    first = app.waits(job.id)[0].wake_at
    clock.advance(100)
    app.store.wake_due()
    run_next(app)  # replays sleep:1 (done), parks on sleep:2
    assert_parked(app, job.id)
    w1, w2 = app.waits(job.id)
    assert w1.wake_at == first and (w2.wake_at - w1.wake_at).total_seconds() == 100
    clock.advance(100)
    app.store.wake_due()
    assert run_next(app).result == "ok"


def _family(app, child_fn):
    app.job("child")(child_fn)
    parent_runs = []

    @app.job("parent")
    def parent(ctx, payload):
        parent_runs.append(ctx.attempt)
        kids = [ctx.enqueue("child", {"n": n}, key=f"c{n}") for n in range(3)]
        return ctx.gather(kids, fail=payload.get("fail", "fast"))
    return parent_runs


def test_gather_wakes_the_parent_once_in_the_last_childs_transaction(app):
    runs = _family(app, lambda ctx, p: p["n"] * 10)
    parent = app.submit("parent", {})
    run_next(app)
    assert_parked(app, parent.id)
    for _ in range(2):
        run_next(app)
        assert_parked(app, parent.id)
    run_next(app)  # the last child: no sweep ran, the parent is queued by its finish
    assert app.get(parent.id).state == JobState.QUEUED
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result == [0, 10, 20]
    assert runs == [1, 2]
    assert kinds(app, parent.id).count("woken") == 1
    children = [j for j in app.list(limit=50) if j.parent_id == parent.id]
    assert len(children) == 3 and all(c.state == JobState.SUCCEEDED for c in children)


def test_gather_of_finished_children_does_not_park(app, clock):
    _family(app, lambda ctx, p: p["n"])

    @app.job("late")
    def late(ctx, payload):
        kids = [ctx.enqueue("child", {"n": n}, key=f"c{n}") for n in range(2)]
        if ctx.attempt == 1:  # hand back behind the children, which then run first
            clock.advance(1)
            ctx.raise_shutdown()
        return ctx.gather(kids)
    job = app.submit("late")
    run_next(app)  # enqueues, then hands back
    run_next(app)
    run_next(app)  # both children done
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result == [0, 1]
    assert "waiting" not in kinds(app, job.id)


def test_fail_fast_fails_the_parent_with_the_childs_code(app):
    def child(ctx, p):
        if p["n"] == 1:
            raise PolicyBlock("refused")
        return p["n"]
    _family(app, child)
    parent = app.submit("parent", {"fail": "fast"})
    run_next(app)
    run_next(app)  # child 0 ok
    run_next(app)  # child 1 fails: the parent wakes without waiting for child 2
    assert app.get(parent.id).state == JobState.QUEUED
    done = run_next(app)
    assert done.state == JobState.FAILED and done.error_code == "policy_block"
    assert "child job" in done.error_summary


def test_collect_returns_failures_in_place(app):
    def child(ctx, p):
        if p["n"] == 2:
            raise PolicyBlock("refused")
        return p["n"]
    _family(app, child)
    parent = app.submit("parent", {"fail": "collect"})
    for _ in range(4):
        run_next(app)
    done = run_next(app)
    assert done.id == parent.id and done.state == JobState.SUCCEEDED
    assert done.result[:2] == [0, 1]
    failure = done.result[2]
    assert failure["state"] == "failed" and failure["error_code"] == "policy_block"


def test_collect_hands_job_code_child_failures(app):
    app.job("child")(lambda ctx, p: (_ for _ in ()).throw(PolicyBlock("no")) if p else 1)

    @app.job("inspect")
    def inspect(ctx, payload):
        (r,) = ctx.gather([ctx.enqueue("child", True, key="x")], fail="collect")
        assert isinstance(r, ChildFailure)
        return [r.state, r.error_code]
    job = app.submit("inspect")
    run_next(app)
    run_next(app)
    assert run_next(app).result == ["failed", "policy_block"]
    assert app.get(job.id).state == JobState.SUCCEEDED


def test_map_jobs_is_enqueue_plus_gather(app):
    app.job("square")(lambda ctx, n: n * n)

    @app.job("squares")
    def squares(ctx, payload):
        return ctx.map_jobs("square", payload)
    job = app.submit("squares", [1, 2, 3])
    for _ in range(4):
        run_next(app)
    assert run_next(app).result == [1, 4, 9]
    assert app.get(job.id).state == JobState.SUCCEEDED


def _approval(app):
    @app.job("approve")
    def approve(ctx, payload):
        first = ctx.wait_for_signal("go", prompt="Approve plan for $42?",
                                    schema={"type": "object"})
        second = ctx.wait_for_signal("go", timeout=30)
        return [first, second]


def test_a_signal_sent_before_the_wait_is_consumed_once(app, clock):
    _approval(app)
    job = app.submit("approve")
    app.signal(job.id, "go", {"ok": 1})
    run_next(app)  # first wait takes the mailbox signal at once; the second one parks
    assert_parked(app, job.id)
    w1, w2 = app.waits(job.id)
    assert (w1.status, w1.value, w1.outcome) == ("done", {"ok": 1}, "received")
    assert w1.prompt == "Approve plan for $42?" and w1.schema == {"type": "object"}
    assert w2.status == "open" and w2.signal == "go"
    assert app.waiting_for(job.id).key == w2.key
    app.signal(job.id, "go", "second")
    assert app.get(job.id).state == JobState.QUEUED
    assert run_next(app).result == [{"ok": 1}, "second"]


def test_a_signal_wait_times_out_by_the_store_clock(app, clock):
    @app.job("patient")
    def patient(ctx, payload):
        from tether import SignalTimeout
        try:
            return ctx.wait_for_signal("go", timeout=30)
        except SignalTimeout as exc:
            return f"timeout: {exc.code}"
    job = app.submit("patient")
    run_next(app)
    assert_parked(app, job.id)
    clock.advance(29)
    assert app.store.wake_due() == 0
    clock.advance(1)
    assert app.store.wake_due() == 1
    assert run_next(app).result == "timeout: signal_timeout"
    app_job = app.get(job.id)
    assert app_job.state == JobState.SUCCEEDED
    with pytest.raises(JobStateError):
        app.signal(job.id, "go", 1)


@pytest.mark.parametrize("name", ["review/legal", "/", ".", ".."])
def test_a_signal_name_no_url_can_carry_is_refused_where_it_is_asked_and_sent(app, name):
    from tether.errors import InvalidArgument

    @app.job("ask_odd")
    def ask_odd(ctx, payload):
        return ctx.wait_for_signal(name)
    job = app.submit("ask_odd")
    done = run_next(app)
    assert (done.state, done.error_code) == (JobState.FAILED, "invalid_argument")
    assert "other than '/', and not '.' or '..'" in done.error_summary
    assert app.waits(job.id) == []
    _approval(app)
    waiting = app.submit("approve")
    run_next(app)
    with pytest.raises(InvalidArgument, match="other than '/'"):
        app.signal(waiting.id, name, 1)
    assert app.get(waiting.id).state == JobState.WAITING


def test_signals_are_scoped_to_the_callers_projects(app):
    _approval(app)
    job = app.submit("approve", project="p1")
    from tether import JobNotFound
    with pytest.raises(JobNotFound):
        app.signal(job.id, "go", 1, projects=["p2"])


def test_cancel_of_a_waiting_parent_cancels_its_live_children_but_not_detached(app):
    app.job("slow")(lambda ctx, p: ctx.sleep(3600))

    @app.job("boss")
    def boss(ctx, payload):
        kept = ctx.enqueue("slow", 1, key="kept", detach=True)
        a = ctx.enqueue("slow", 2, key="a")
        b = ctx.enqueue("slow", 3, key="b")
        return ctx.gather([kept, a, b])
    boss_job = app.submit("boss")
    run_next(app)
    run_next(app)  # "kept" sleeps
    run_next(app)  # "a" sleeps; "b" stays queued
    app.cancel(boss_job.id)
    assert app.get(boss_job.id).state == JobState.CANCELLED
    kids = {j.idempotency_key.split(":")[-1]: j for j in app.list(limit=50)
            if j.parent_id == boss_job.id}
    assert kids["kept"].state == JobState.WAITING
    assert kids["a"].state == JobState.CANCELLED and kids["b"].state == JobState.CANCELLED
    assert kids["a"].error_code == "cancelled"


def test_pause_and_resume_a_waiting_job(app, clock):
    @app.job("nap3")
    def nap3(ctx, payload):
        ctx.sleep(10)
        return "ok"
    job = app.submit("nap3")
    run_next(app)
    app.pause(job.id)
    assert app.get(job.id).state == JobState.PAUSED
    clock.advance(10)
    assert app.store.wake_due() == 0, "a paused job is not woken"
    app.resume(job.id)
    assert run_next(app).result == "ok", "the timer fired meanwhile: the replay runs on"


@pytest.mark.parametrize("forever", [1e300, float("inf"), 10**400, timedelta(days=10**8)])
def test_a_wait_longer_than_the_calendar_parks_until_its_end(app, clock, forever):
    """Python cannot hold a time after 9999, so neither may the store: a timer or a signal
    timeout beyond it waits until 9999-12-31 23:59:59 UTC and every read of the job works."""
    @app.job("forever")
    def long_nap(ctx, payload):
        if payload == "signal":
            return ctx.wait_for_signal("go", timeout=forever)
        ctx.sleep(forever)
        return "rested"
    napper = app.submit("forever", "sleep")
    listener = app.submit("forever", "signal")
    run_next(app)
    run_next(app)
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    for job in (napper, listener):
        assert_parked(app, job.id)
        (w,) = app.waits(job.id)
        assert w.wake_at == end and app.get(job.id).run_after == end
    assert {j.id for j in app.list(state="waiting")} == {napper.id, listener.id}
    clock.advance(10**9)
    assert app.store.wake_due() == 0
    app.signal(listener.id, "go", "at last")
    assert run_next(app).result == "at last"


@pytest.mark.parametrize("duration", [-1, float("nan"), "soon", None, -10**400])
def test_a_sleep_of_no_duration_fails_the_job_with_invalid_argument(app, duration):
    @app.job("bad_nap")
    def bad_nap(ctx, payload):
        ctx.sleep(duration)
    job = app.submit("bad_nap")
    done = run_next(app)
    assert (done.state, done.error_code) == (JobState.FAILED, "invalid_argument")
    assert "sleep needs a duration >= 0 seconds" in done.error_summary
    assert app.waits(job.id) == []
