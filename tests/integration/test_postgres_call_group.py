"""PostgreSQL's group commit of calls (``store/postgres/group.py``): the reservations and
settlements of many jobs in one transaction, each kept to the promises it has alone."""

from __future__ import annotations

import threading
from decimal import Decimal

import psycopg
import pytest

from tether import Tether
from tether.core.budget import Reservation
from tether.store.base import CallReserve, CallSettle
from tether.store.postgres.group import CallGroup
from tether.store.postgres.store import conninfo_from_url

from tests.money import PRICE, running_job
from tether.core.usage import Usage

pytestmark = pytest.mark.postgres


def res(key, cost="0.10", stage="s"):
    return CallReserve(key, stage, "simulated", "sim-small", Reservation(Decimal(cost), 100, 50))


def settle(key):
    return CallSettle(key, Usage(60, 40), PRICE, "p@1", '{"text": "ok"}')


def errors(outcomes):
    return [type(e).__name__ if e is not None else None for _, e in outcomes]


@pytest.fixture
def app(pg_url, clock):
    a = Tether(pg_url, clock=clock)
    yield a
    a.close()


def jobs_with_a_first_call(app, n, **submit):
    """``n`` running jobs, each with one call reserved alone (its accumulators created)."""
    out = []
    for _ in range(n):
        job, tok = running_job(app, **submit)
        assert errors(app.store.account(job.id, tok, [res("first")])) == [None]
        out.append((job, tok))
    return out


def xmins(app, jobs, key):
    with psycopg.connect(conninfo_from_url(app.store.url)) as c:
        return {r[0] for r in c.execute(
            "SELECT xmin::text FROM call_journal WHERE key = %s AND job_id = ANY(%s)",
            (key, [j.id for j, _ in jobs]))}


def test_calls_of_several_jobs_commit_in_one_transaction(app):
    jobs = jobs_with_a_first_call(app, 3)
    group = CallGroup(app.store)
    out = group._flush([(j.id, tok, [settle("first"), res("next")]) for j, tok in jobs])
    assert [errors(result) for result, error in out] == [[None, None]] * 3
    assert all(error is None for _, error in out)
    assert len(xmins(app, jobs, "next")) == 1  # one transaction wrote all three
    project = app.project_budget("default").used
    assert project.calls == 3 and project.reserved_calls == 3
    assert project.spent_usd == 3 * PRICE.cost(Usage(60, 40))
    for job, _ in jobs:
        used = app.get(job.id).budget.used
        assert used.calls == 1 and used.reserved_calls == 1
        assert [e.status for e in app.store.journal(job.id)] == ["done", "reserved"]
        assert len(app.ledger(job.id)) == 1


def test_a_shared_limit_counts_every_job_before_it_in_the_group(app):
    app.set_project_budget("default", {"max_calls": 4})
    jobs = jobs_with_a_first_call(app, 3)  # 3 of the 4 reserved
    out = CallGroup(app.store)._flush([(j.id, tok, [res("next")]) for j, tok in jobs])
    refused = [errors(result)[0] for result, _ in out]
    assert refused.count(None) == 1 and refused.count("BudgetExhausted") == 2
    assert app.project_budget("default").used.reserved_calls == 4


def test_a_lost_lease_fails_only_its_own_calls(app):
    jobs = jobs_with_a_first_call(app, 3)
    entries = [(j.id, tok, [res("next")]) for j, tok in jobs]
    entries[1] = (jobs[1][0].id, jobs[1][1] + 1, [res("next")])
    out = CallGroup(app.store)._flush(entries)
    assert [errors(result) for result, _ in out] == [[None], ["LeaseLost"], [None]]
    assert len(xmins(app, jobs, "next")) == 1
    assert [e.key for e in app.store.journal(jobs[1][0].id)] == ["first"]


def test_a_statement_that_fails_rolls_back_the_group_and_each_job_is_written_alone(app):
    jobs = jobs_with_a_first_call(app, 3)
    entries = [(j.id, tok, [res("next")]) for j, tok in jobs]
    entries[2] = (jobs[2][0].id, jobs[2][1], [res("next", stage="bad\x00stage")])
    out = CallGroup(app.store)._flush(entries)
    assert [error is None for _, error in out] == [True, True, False]
    assert len(xmins(app, jobs[:2], "next")) == 2  # each in a transaction of its own
    assert [e.key for e in app.store.journal(jobs[2][0].id)] == ["first"]
    assert app.project_budget("default").used.reserved_calls == 5


def test_a_job_row_held_elsewhere_is_skipped_not_waited_for(app):
    jobs = jobs_with_a_first_call(app, 3)
    entries = [(j.id, tok, [res("next")]) for j, tok in jobs]
    with psycopg.connect(conninfo_from_url(app.store.url)) as other:
        other.execute("SELECT 1 FROM jobs WHERE id = %s FOR NO KEY UPDATE", (jobs[0][0].id,))
        results = CallGroup(app.store)._together(entries)  # would block if it waited
        assert results[0] is None and [errors(r) for r in results[1:]] == [[None], [None]]
    out = CallGroup(app.store)._flush(entries[:1])  # released: written alone
    assert errors(out[0][0]) == [None]
    assert app.project_budget("default").used.reserved_calls == 6


def test_concurrent_jobs_never_overshoot_a_shared_limit(app):
    app.set_project_budget("default", {"max_calls": 30})
    jobs = jobs_with_a_first_call(app, 8)  # 8 reserved
    barrier = threading.Barrier(len(jobs))
    refused: list[int] = []

    def calls(job, tok):
        barrier.wait()
        n = 0
        for i in range(6):
            (value, exc), = app.store.account(job.id, tok, [res(f"k{i}")])
            if exc is not None:
                n += 1
                continue
            assert errors(app.store.account(job.id, tok, [settle(f"k{i}")])) == [None]
        refused.append(n)

    threads = [threading.Thread(target=calls, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    used = app.project_budget("default").used
    assert used.calls + used.reserved_calls == 30 == 8 + 48 - sum(refused)
    assert used.reserved_calls == 8
    assert sum(len(app.ledger(j.id)) for j, _ in jobs) == used.calls
