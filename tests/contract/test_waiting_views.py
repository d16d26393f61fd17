"""What the interfaces show of waiting jobs, on every backend: ``waiting_summary`` (a signal's
question, a timer's wake time, a gather's n/m children done) and ``list_waiting`` (the
dashboard's "Waiting for me")."""

import pytest

from tether import JobNotFound, JobState
from tether.errors import InvalidArgument

from tests.contract.test_waits import run_next


def _asker(app):
    @app.job("ask")
    def ask(ctx, payload):
        return ctx.wait_for_signal("approve", timeout=600, prompt=payload.get("prompt"),
                                   schema={"type": "boolean"})


def test_a_signal_wait_shows_its_question_and_deadline(app, clock):
    _asker(app)
    job = app.submit("ask", {"prompt": "Approve plan for $42?"}, project="p1")
    assert app.waiting_summary(job.id) is None, "a queued job waits for nothing"
    run_next(app)
    w = app.waiting_summary(job.id)
    assert (w.kind, w.signal, w.prompt, w.schema) == ("signal", "approve",
                                                      "Approve plan for $42?",
                                                      {"type": "boolean"})
    assert w.key == "signal:approve:1" and w.children is None
    assert (w.wake_at - w.since).total_seconds() == pytest.approx(600)
    assert w.to_dict()["wake_at"] == w.wake_at.isoformat()
    with pytest.raises(JobNotFound):
        app.waiting_summary(job.id, projects=["p2"])
    app.signal(job.id, "approve", True)
    assert app.waiting_summary(job.id) is None, "a woken job is queued, not waiting"
    assert run_next(app).result is True


def test_a_gather_shows_how_many_children_finished(app):
    @app.job("kid")
    def kid(ctx, payload):
        return payload["n"]

    @app.job("mom")
    def mom(ctx, payload):
        kids = [ctx.enqueue("kid", {"n": i}, key=f"k{i}") for i in range(3)]
        return sum(ctx.gather(kids))
    parent = app.submit("mom")
    run_next(app)
    w = app.waiting_summary(parent.id)
    assert (w.kind, w.children, w.children_done) == ("children", 3, 0)
    run_next(app)
    assert app.waiting_summary(parent.id).children_done == 1
    run_next(app)
    assert app.waiting_summary(parent.id).children_done == 2
    run_next(app)  # the last child wakes the parent in its own transaction
    assert app.get(parent.id).state == JobState.QUEUED
    assert app.waiting_summary(parent.id) is None
    assert run_next(app).result == 3


def test_a_timer_shows_when_it_wakes(app, clock):
    @app.job("nap")
    def nap(ctx, payload):
        ctx.sleep(90)
    job = app.submit("nap")
    run_next(app)
    w = app.waiting_summary(job.id)
    assert w.kind == "timer" and w.signal is None and w.children is None
    assert (w.wake_at - w.since).total_seconds() == pytest.approx(90)


def test_list_waiting_finds_the_jobs_that_wait_for_an_answer(app, clock):
    _asker(app)

    @app.job("nap")
    def nap(ctx, payload):
        ctx.sleep(90)
    a1 = app.submit("ask", {"prompt": "one"}, project="p1")
    a2 = app.submit("ask", {"prompt": "two"}, project="p2")
    timer = app.submit("nap", project="p1")
    queued = app.submit("ask", {"prompt": "later"}, project="p1", run_after=clock.time() + 3600)
    for _ in range(3):
        run_next(app)
    assert app.get(queued.id).state == JobState.QUEUED
    assert [j.id for j in app.list_waiting()] == [a2.id, a1.id]
    assert [j.id for j in app.list_waiting(projects=["p1"])] == [a1.id]
    assert [j.id for j in app.list_waiting(project="p2", projects=["p1"])] == []
    assert [j.id for j in app.list_waiting("timer")] == [timer.id]
    assert [j.id for j in app.list_waiting(before_id=a2.id)] == [a1.id]
    assert [j.id for j in app.list_waiting(search=str(a1.id))] == [a1.id]
    assert [j.id for j in app.list_waiting(type="nap")] == []
    assert [j.id for j in app.list_waiting(limit=1)] == [a2.id]
    app.signal(a2.id, "approve", False)
    assert [j.id for j in app.list_waiting()] == [a1.id]
    app.pause(a1.id)
    assert app.list_waiting() == [], "a paused job is not waiting for anybody now"
    with pytest.raises(InvalidArgument):
        app.list_waiting("approval")


def test_a_gathers_summary_reads_its_counts_not_its_children(app):
    """However many children, ``waiting_summary`` runs the same few statements and none that
    reads the children's ids or rows."""
    from tests.statements import recorded
    app.job("kid")(lambda ctx, n: n)

    @app.job("mom")
    def mom(ctx, n):
        return ctx.map_jobs("kid", range(n))
    seen = {}
    for n in (3, 60):
        parent = app.submit("mom", n)
        run_next(app)
        for _ in range(2):
            run_next(app)
        with recorded() as statements:
            w = app.waiting_summary(parent.id)
        assert (w.children, w.children_done) == (n, 2)
        seen[n] = [name for name, _, _ in statements]
        while run_next(app) is not None:
            pass
    assert seen[3] == seen[60]
    assert not {"wait_child_ids", "wait_count"} & set(seen[60]), seen[60]
