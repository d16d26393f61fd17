"""Job ids on every backend: a repeated idempotency key returns the existing job and uses up
no id, so the ids a user sees are consecutive ("tether job status 2" after jobs 1 and 2)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tether import IdempotencyConflict, Tether
from tests.contract.test_waits import run_next


def register(app):
    app.job("echo")(lambda ctx, payload: payload)


def test_a_repeated_key_uses_up_no_id(app):
    register(app)
    first = app.submit("echo", {"n": 1}, idempotency_key="k")
    assert app.submit("echo", {"n": 1}, idempotency_key="k").id == first.id
    with pytest.raises(IdempotencyConflict):
        app.submit("echo", {"n": 2}, idempotency_key="k")
    assert app.submit("echo", {"n": 3}).id == first.id + 1


def test_a_batch_of_repeated_and_new_keys_takes_one_id_per_new_job(app):
    register(app)
    (a,) = app.submit_many([{"type": "echo", "idempotency_key": "a"}])
    batch = app.submit_many([
        {"type": "echo", "idempotency_key": "a"},  # exists
        {"type": "echo", "idempotency_key": "b"},
        {"type": "echo", "idempotency_key": "b"},  # earlier in this batch
        {"type": "echo"},
        {"type": "echo", "idempotency_key": "c"}])
    assert [j.id for j in batch] == [a.id, a.id + 1, a.id + 1, a.id + 2, a.id + 3]
    again = app.submit_many([{"type": "echo", "idempotency_key": k} for k in "cba"])
    assert [j.id for j in again] == [a.id + 3, a.id + 1, a.id]
    assert app.submit("echo").id == a.id + 4


def test_a_replayed_map_jobs_uses_up_no_id(app):
    """The parent replays ``map_jobs`` after its children woke it: each child's enqueue is a
    repeat of its key, and the next job submitted takes the next id."""
    app.job("square")(lambda ctx, n: n * n)

    @app.job("squares")
    def squares(ctx, payload):
        return ctx.map_jobs("square", payload)
    parent = app.submit("squares", [1, 2, 3])
    run_next(app)  # enqueues the children, waits for them
    children = [j.id for j in app.list(limit=10) if j.parent_id == parent.id]
    assert sorted(children) == [parent.id + 1, parent.id + 2, parent.id + 3]
    for _ in children:
        run_next(app)
    assert run_next(app).result == [1, 4, 9]  # the replay enqueues the same three keys
    assert app.submit("square", 4).id == parent.id + 4


def test_submitters_racing_on_the_same_keys_make_one_job_per_key(database_url, backend, clock):
    """Six submitters, each with its own connections, send the same twenty keys at once."""
    keys = [f"doc-{i}" for i in range(20)]
    apps = [Tether(database_url, clock=clock) for _ in range(6)]
    for a in apps:
        a.store  # opened here: Tether opens its store lazily, and not thread-safely
    start = threading.Barrier(len(apps))

    def submit(a):
        start.wait()
        return [j.id for j in a.submit_many([{"type": "echo", "idempotency_key": k}
                                             for k in keys])]
    try:
        with ThreadPoolExecutor(len(apps)) as pool:
            seen = list(pool.map(submit, apps))
        assert all(ids == seen[0] for ids in seen)
        assert len(set(seen[0])) == len(keys) == len(apps[0].list(limit=100))
        if backend == "sqlite":  # writers take turns (BEGIN IMMEDIATE): no id is lost
            assert seen[0] == list(range(1, len(keys) + 1))
    finally:
        for a in apps:
            a.close()
