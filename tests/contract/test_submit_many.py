"""Bulk submission (issue 25): a large batch with mixed keys and repeats is one transaction
whose jobs, events and idempotent repeats are exactly what single submits give — every backend."""

from decimal import Decimal

import pytest

from tether import IdempotencyConflict, JobState, Tether

N = 2_000


def register(app):
    @app.job("echo")
    def echo(ctx, payload):
        return payload


def batch(prefix: str = "n"):
    """2,000 items: unkeyed jobs, new keys, repeats of the 300 keys ``seed`` wrote, one key
    twice in the batch; two projects, some budgets, priorities and start times."""
    items = []
    for i in range(N):
        item = {"type": "echo", "payload": {"i": i, "text": "ü" * (i % 3)},
                "project": "p1" if i % 2 else "p2"}
        if i % 4 == 1:
            item["idempotency_key"] = f"{prefix}{i}"
        elif i % 4 == 2 and i < 1200:
            item["idempotency_key"] = f"seed{i}"
        if i % 5 == 0:
            item["budget"] = {"max_cost_usd": "0.25", "max_calls": i % 7 + 1}
        if i % 7 == 0:
            item["priority"] = i % 3
        if i % 11 == 0:
            item["run_after"] = 1_900_000_000.5 + i
        items.append(item)
    items.append(dict(items[1]))  # the same key again, later in the same batch
    return items


def seed(app):
    return app.submit_many([it for it in batch() if str(it.get("idempotency_key", "")
                                                          ).startswith("seed")])


def test_a_large_batch_with_repeats_inserts_each_new_job_once_and_returns_what_get_returns(app):
    register(app)
    seeded = {(j.project, j.idempotency_key): j for j in seed(app)}
    assert len(seeded) == 300
    items = batch()
    jobs = app.submit_many(items)

    assert len(jobs) == N + 1
    assert jobs[-1] == jobs[1]  # a key twice in one batch: one job
    for item, job in zip(items, jobs):
        assert job == app.get(job.id)
        key = item.get("idempotency_key")
        assert (job.type, job.project, job.idempotency_key, job.payload) == (
            "echo", item["project"], key, item["payload"])
        if key is not None and key.startswith("seed"):
            assert job == seeded[(job.project, key)]
    new = {j.id for j, it in zip(jobs, items) if not it.get("idempotency_key", "n").startswith("seed")}
    assert len(new) == N - 300
    assert not new & {j.id for j in seeded.values()}
    assert len(app.list(limit=10_000)) == N

    job = next(j for j, it in zip(jobs, items) if "budget" in it and "run_after" in it
               and "idempotency_key" not in it)
    assert job.budget.limits.max_cost_usd == Decimal("0.25")
    assert job.budget.used.calls == 0 and job.budget.used.spent_usd == 0
    assert job.run_after.timestamp() == pytest.approx(1_900_000_000.5 + next(
        i for i, j in enumerate(jobs) if j.id == job.id))
    assert job.state == JobState.QUEUED and job.attempt_count == 0

    for job in {j.id: j for j in jobs}.values():
        events = app.events(job.id)
        assert [(e.seq, e.kind, e.from_state, e.to_state) for e in events] == [
            (1, "submitted", None, "queued")]
        assert events[0].data == {"type": "echo", "queue": job.queue,
                                  "idempotency_key": job.idempotency_key}
        assert events[0].at == job.created_at


def test_repeating_a_large_keyed_batch_returns_the_same_jobs_and_writes_nothing(app):
    register(app)
    seed(app)
    items = [it for it in batch() if "idempotency_key" in it]
    first = app.submit_many(items)
    again = app.submit_many(items)
    assert again == first
    assert all(job == app.get(job.id) for job in again)
    assert len(app.list(limit=10_000)) == len({j.id for j in first})
    assert all(len(app.events(job.id)) == 1 for job in again[:50])


def test_a_conflicting_key_at_the_end_of_a_large_batch_rolls_the_whole_batch_back(app):
    register(app)
    seed(app)
    before = [(j.id, j.updated_at) for j in app.list(limit=10_000)]
    items = batch()
    conflicting = next(it for it in items if str(it.get("idempotency_key")).startswith("seed"))
    items.append({**conflicting, "payload": {"other": True}})
    with pytest.raises(IdempotencyConflict) as info:
        app.submit_many(items)
    assert info.value.code == "idempotency_conflict"
    assert [(j.id, j.updated_at) for j in app.list(limit=10_000)] == before


def test_jobs_returned_on_the_database_clock_equal_get(database_url):
    """Without an injected clock the database picks the times; payload numbers come back as
    the database stores them (a large float reads back as an integer from jsonb)."""
    app = Tether(database_url)
    try:
        register(app)
        payloads = [None, {"f": 1.5e300, "n": 1e20, "x": 0.1}, [1, "ü", {"b": None}], "s"]
        single = [app.submit("echo", p) for p in payloads]
        single.append(app.submit("echo", {"k": 1}, idempotency_key="k", run_after=2e9))
        many = app.submit_many([{"type": "echo", "payload": p} for p in payloads]
                               + [{"type": "echo", "payload": {"k": 1}, "idempotency_key": "k"}])
        for job in single + many:
            assert job == app.get(job.id)
        assert many[-1] == single[-1]
    finally:
        app.close()
