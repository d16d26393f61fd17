"""Fan-out at scale on every backend: children enqueued a batch a statement, a gather counted
as its children end (the parent's row untouched until the last), results read from the
children's rows in pages (injected clock, no sleeps)."""

from tether import JobState
from tether.core.waits import RECHECK_S
from tether.job import context

from tests.contract.test_waits import assert_parked, kinds, run_next

N = 50


def _squares(app, *, page_size=None):
    app.job("square")(lambda ctx, n: n * n)

    @app.job("squares")
    def squares(ctx, payload):
        if page_size is None:
            return ctx.map_jobs("square", range(payload))
        return list(ctx.map_jobs_iter("square", range(payload), page_size=page_size))


def _drain(app, limit=10_000):
    for _ in range(limit):
        if run_next(app) is None:
            return
    raise AssertionError("the queue did not drain")


def test_a_map_over_fifty_children_enqueues_in_batches_and_returns_every_result(app,
                                                                                monkeypatch):
    monkeypatch.setattr(context, "CHILD_BATCH", 20)
    batches = []
    submit_children = app.submit_children
    monkeypatch.setattr(app, "submit_children", lambda jobs, **kw: batches.append(len(jobs))
                        or submit_children(jobs, **kw))
    _squares(app)
    parent = app.submit("squares", N)
    run_next(app)
    assert_parked(app, parent.id)
    assert batches == [20, 20, 10]
    _drain(app)
    done = app.get(parent.id)
    assert done.state == JobState.SUCCEEDED and done.result == [n * n for n in range(N)]
    assert kinds(app, parent.id).count("woken") == 1
    (wait,) = app.waits(parent.id)
    assert len(wait.children) == N and wait.value is None and wait.outcome == "children_done"


def test_a_replayed_map_jobs_makes_no_second_child_and_takes_no_id(app, monkeypatch):
    """The parent is handed back after enqueuing (a crash before its wait), runs again, and
    once woken replays the map a third time: still one child per item, and no id used up."""
    monkeypatch.setattr(context, "CHILD_BATCH", 20)
    app.job("square")(lambda ctx, n: n * n)
    runs = []

    @app.job("squares")
    def squares(ctx, payload):
        kids = ctx.enqueue_many("square", range(payload))
        runs.append(kids)
        if ctx.attempt == 1:
            ctx.raise_shutdown()
        return ctx.gather(kids)
    parent = app.submit("squares", N)
    run_next(app)
    run_next(app)  # the replay: same children, then the wait
    assert_parked(app, parent.id)
    _drain(app)
    assert app.get(parent.id).result == [n * n for n in range(N)]
    assert len(runs) == 3 and runs[0] == runs[1] == runs[2]
    children = [j for j in app.list(limit=200) if j.parent_id == parent.id]
    assert sorted(j.id for j in children) == runs[0] == list(range(parent.id + 1,
                                                                   parent.id + N + 1))
    assert app.submit("square", 1).id == parent.id + N + 1


def test_a_woken_parent_reads_its_children_by_key_and_writes_no_job(app, monkeypatch):
    """The replay after the wake finds every child by its key in one read a batch: it
    submits nothing (no insert is tried), and gets the same children in the same order."""
    monkeypatch.setattr(context, "CHILD_BATCH", 20)
    app.job("square")(lambda ctx, n: n * n)
    runs = []

    @app.job("squares")
    def squares(ctx, payload):
        kids = ctx.enqueue_many("square", range(payload))
        runs.append(kids)
        return ctx.gather(kids)
    parent = app.submit("squares", N)
    run_next(app)
    for _ in range(N):
        run_next(app)
    submitted, reads = [], []
    submit_ids, ids_of_keys = app.store.submit_ids, app.store.ids_of_keys
    monkeypatch.setattr(app.store, "submit_ids", lambda jobs, **kw: submitted.append(len(jobs))
                        or submit_ids(jobs, **kw))
    monkeypatch.setattr(app.store, "ids_of_keys", lambda jobs: reads.append(len(jobs))
                        or ids_of_keys(jobs))
    done = run_next(app)
    assert done.id == parent.id and done.result == [n * n for n in range(N)]
    assert submitted == [] and reads == [20, 20, 10]
    assert len(runs) == 2 and runs[0] == runs[1]


def test_a_replay_that_maps_other_items_conflicts_with_its_children(app):
    """A key found on the replay still names its configuration: a parent whose items
    changed between its attempts fails with ``idempotency_conflict``, and no child is
    added."""
    app.job("square")(lambda ctx, n: n * n)

    @app.job("drifting", max_attempts=1)
    def drifting(ctx, payload):
        return ctx.map_jobs("square", [n + ctx.attempt for n in range(payload)])
    parent = app.submit("drifting", 3)
    run_next(app)
    for _ in range(3):
        run_next(app)
    done = run_next(app)
    assert done.id == parent.id and done.state == JobState.FAILED
    assert done.error_code == "idempotency_conflict"
    assert len([j for j in app.list(limit=20) if j.parent_id == parent.id]) == 3


def test_the_sweep_wakes_a_gather_whose_count_was_lost(app, clock, backend):
    """Every child ended, but the gather's count says some did not (a count lost in a crash
    window, made here by editing the row): the sweep counts the children again from their
    rows and wakes the parent."""
    _squares(app)
    parent = app.submit("squares", N)
    run_next(app)
    mark = "?" if backend == "sqlite" else "%s"
    with app.store._write() as tx:
        tx.conn.execute(f"UPDATE job_waits SET pending = pending + 3 WHERE job_id = {mark}",
                        (parent.id,))
    for _ in range(N):
        run_next(app)
    assert_parked(app, parent.id)  # the last child's count did not reach zero
    assert app.store.wake_due() == 0  # not due yet: a backstop, not a poll
    clock.advance(RECHECK_S + 1)
    assert app.store.wake_due() == 1
    assert run_next(app).result == [n * n for n in range(N)]


def test_a_child_that_ended_unseen_by_the_gather_wakes_its_parent_within_seconds(
        app, clock, backend):
    """The race: a child's finish read the gathers waiting for it before its parent's gather
    committed (so it counted itself in none), and committed after the parent's park counted
    the children (so the park saw it running). Made here by ending the child's row behind
    the store's back once the parent has parked. The recount soon after the park finds it."""
    from tether.core.waits import PARKED_RECHECK_S
    _squares(app)
    parent = app.submit("squares", 1)
    run_next(app)
    assert_parked(app, parent.id)
    (child,) = [j for j in app.list(limit=10) if j.parent_id == parent.id]
    mark = "?" if backend == "sqlite" else "%s"
    with app.store._write() as tx:
        tx.conn.execute(f"UPDATE jobs SET state = 'succeeded', result = '0', "
                        f"finished_at = run_after WHERE id = {mark}", (child.id,))
    clock.advance(PARKED_RECHECK_S - 0.5)
    assert app.store.wake_due() == 0
    clock.advance(0.5)
    assert app.store.wake_due() == 1, "woken within PARKED_RECHECK_S, not RECHECK_S"
    assert run_next(app).result == [0]


def test_streamed_results_come_in_pages_in_order(app, monkeypatch):
    _squares(app, page_size=7)
    pages = []
    read = app.store.wait_results

    def spy(job_id, key, *, after=0, limit=1000):
        page = read(job_id, key, after=after, limit=limit)
        pages.append((after, limit, len(page)))
        return page
    monkeypatch.setattr(app.store, "wait_results", spy)
    parent = app.submit("squares", 20)
    _drain(app)
    assert app.get(parent.id).result == [n * n for n in range(20)]
    assert pages == [(0, 7, 7), (7, 7, 7), (14, 7, 6)]


def test_a_failed_child_among_many_fails_the_parent_with_its_code(app):
    @app.job("picky", max_attempts=1)
    def picky(ctx, n):
        if n == 30:
            raise ValueError("no thirty")
        return n

    @app.job("many")
    def many(ctx, payload):
        return ctx.map_jobs("picky", range(N))
    parent = app.submit("many")
    _drain(app)
    done = app.get(parent.id)
    assert done.state == JobState.FAILED
    assert "child job" in (done.error_summary or "")
    (wait,) = app.waits(parent.id)
    assert wait.outcome == "child_failed" and wait.value["failed"]["state"] == "failed"


def test_a_batch_of_children_finished_together_wakes_their_parent_once(app):
    """Workers report successes many at a time (``finish_many``): the children of a batch
    are written set-wise, counted in their gather together, and the parent wakes once."""
    from tether.store.base import Outcome

    _squares(app)
    parent = app.submit("squares", N)
    run_next(app)
    claims = app.store.claim("w", queues=None, limit=N, lease_ttl=3600, start=True)
    assert len(claims) == N and all(c.started for c in claims)

    def finish(part):
        return app.store.finish_many([(c.job.id, c.attempt, Outcome(
            JobState.SUCCEEDED, result_json=str(c.job.payload ** 2))) for c in part])
    assert finish(claims[:N // 2]) == [JobState.SUCCEEDED] * (N // 2)
    assert_parked(app, parent.id)
    finish(claims[N // 2:])
    assert app.get(parent.id).state == JobState.QUEUED
    assert run_next(app).result == [n * n for n in range(N)]
    assert kinds(app, parent.id).count("woken") == 1
