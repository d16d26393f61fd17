"""Prune deletes old finished jobs with their history, a batch a transaction, on every backend."""

import pytest

from tether import JobNotFound, JobState
from tether.errors import InvalidArgument
from tests.contract.test_context import claim_and_run


def _boom(ctx, payload):
    raise RuntimeError("boom")


def _history(app, job_id):
    return len(app.store.events(job_id)), len(app.store.attempts(job_id))


def test_prune_takes_old_finished_jobs_in_batches_and_keeps_the_rest(app, clock):
    app.register("ok", lambda ctx, payload: None)
    app.register("bad", _boom, max_attempts=1)
    old = []
    for kind in ("ok", "bad", "ok", "ok", "bad"):
        app.submit(kind)
        old.append(claim_and_run(app).id)
        clock.advance(10)
    cancelled = app.cancel(app.submit("ok").id)
    assert cancelled.state == JobState.CANCELLED
    old.append(cancelled.id)
    paused = app.pause(app.submit("ok").id)  # old but not finished: never pruned
    assert all(_history(app, j)[0] > 0 for j in old)
    clock.advance(3600)
    app.submit("ok")
    recent = claim_and_run(app)
    assert recent.state == JobState.SUCCEEDED

    assert app.store.prune(older_than_s=60, batch=2) == len(old)

    for job_id in old:
        with pytest.raises(JobNotFound):
            app.get(job_id)
        assert _history(app, job_id) == (0, 0)
    assert app.get(paused.id).state == JobState.PAUSED
    assert app.get(recent.id).state == JobState.SUCCEEDED
    assert _history(app, recent.id)[1] == 1
    assert app.store.prune(older_than_s=60, batch=2) == 0


def test_jobs_finished_at_the_same_instant_all_go_whatever_the_batch(app, clock):
    """A batch resumes from the last one's newest finish time, ties included."""
    app.register("ok", lambda ctx, payload: None)
    ids = []
    for _ in range(3):
        app.submit("ok")
        ids.append(claim_and_run(app).id)
    assert len({app.get(j).finished_at for j in ids}) == 1
    clock.advance(120)
    assert app.prune(older_than_s=60) == 3  # the facade: what `tether prune` calls
    for _ in range(3):
        app.submit("ok")
        claim_and_run(app)
    clock.advance(120)
    assert app.store.prune(older_than_s=60, batch=1) == 3
    assert app.list() == []


def test_a_batch_below_one_is_refused(app):
    with pytest.raises(InvalidArgument):
        app.store.prune(older_than_s=60, batch=0)
