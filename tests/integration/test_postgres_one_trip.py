"""A call's reservation and its settlement are one round trip each on PostgreSQL where nothing
needs deciding in Python (``store/postgres/onetrip.py``), and every case that does need it
still goes the general way with the same outcome.

Round trips are counted from libpq's own trace of the store's one pooled connection: every
round trip ends with the server's ReadyForQuery (after a Sync, or a simple query), however
many statements it carried."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from decimal import Decimal

import psycopg
import pytest
from psycopg import pq

from tether import BudgetExhausted, JobCancelled, LeaseLost, Tether
from tether.core.budget import Reservation
from tether.core.usage import Usage
from tether.records import JournalEntry
from tether.store.base import CallReserve, CallSettle
from tether.store.postgres.store import conninfo_from_url

from tests.money import PRICE, running_job

pytestmark = pytest.mark.postgres


def res(key, cost="0.10"):
    return CallReserve(key, "s", "simulated", "sim-small", Reservation(Decimal(cost), 100, 50))


def settle(key, tin=60, tout=40, refused=False):
    return CallSettle(key, Usage(tin, tout), PRICE, "p@1", '{"text": "ok"}', refused)


def errors(outcomes):
    return [type(e).__name__ if e is not None else None for _, e in outcomes]


@pytest.fixture
def app(pg_url, clock):
    a = Tether(pg_url, clock=clock, min_size=1, max_size=1)
    yield a
    a.close()


@contextmanager
def round_trips(app):
    """Counts the round trips the store's one connection makes inside: ``counted[0]``."""
    counted = [0]
    with app.store._pool.connection() as c:
        pgconn = c.pgconn
    fd, path = tempfile.mkstemp(suffix=".trace")
    try:
        pgconn.trace(fd)  # libpq writes through a stream on fd; untrace flushes it
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield counted
        finally:
            pgconn.untrace()
        with open(path) as f:
            counted[0] = sum(1 for line in f if line.startswith("B\t")
                             and "\tReadyForQuery\t" in line)
    finally:
        os.close(fd)
        os.unlink(path)


def job_with_a_first_call(app, **submit):
    """A running job whose first call was written the general way (accumulators created)."""
    job, tok = running_job(app, **submit)
    assert errors(app.store.account(job.id, tok, [res("first")])) == [None]
    return job, tok


def test_a_reservation_and_a_settlement_are_one_round_trip_each(app):
    job, tok = job_with_a_first_call(app)
    for key in ("first", "a", "b"):
        if key != "first":
            with round_trips(app) as reserved:
                assert errors(app.store.account(job.id, tok, [res(key)])) == [None]
            assert reserved[0] == 1
        with round_trips(app) as settled:
            assert errors(app.store.account(job.id, tok, [settle(key)])) == [None]
        assert settled[0] == 1
    # what was written is what the general path writes
    entries = app.store.journal(job.id)
    assert [(e.key, e.status, e.attempt) for e in entries] == [
        ("a", "done", tok), ("b", "done", tok), ("first", "done", tok)]
    cost = PRICE.cost(Usage(60, 40))
    assert all(e.cost_usd == cost and e.result == {"text": "ok"} for e in entries)
    used = app.get(job.id).budget.used
    assert (used.calls, used.reserved_calls, used.reserved_usd) == (3, 0, 0)
    assert (used.input_tokens, used.output_tokens, used.spent_usd) == (180, 120, 3 * cost)
    project = app.project_budget("default").used
    assert (project.calls, project.reserved_calls, project.spent_usd) == (3, 0, 3 * cost)
    ledger = app.ledger(job.id)
    assert sorted(r.key for r in ledger) == ["a", "b", "first"]
    assert all(r.cost_usd == cost and r.confirmed and not r.overrun for r in ledger)
    assert all(r.reserved_usd == Decimal("0.10") for r in ledger)
    (total,) = app.store.spend_totals(["default"])
    assert (total["calls"], total["cost_usd"], total["unconfirmed_calls"]) == (3, 3 * cost, 0)


def test_a_reservation_is_committed_when_account_returns(app):
    job, tok = job_with_a_first_call(app)
    assert errors(app.store.account(job.id, tok, [res("a")])) == [None]
    with psycopg.connect(conninfo_from_url(app.store.url)) as other:
        row = other.execute("SELECT status, attempt FROM call_journal "
                            "WHERE job_id = %s AND key = 'a'", (job.id,)).fetchone()
        reserved = other.execute("SELECT reserved_calls FROM budgets WHERE scope = 'job' "
                                 "AND key = %s", (str(job.id),)).fetchone()
    assert row == ("reserved", tok) and reserved == (2,)


def test_what_needs_deciding_goes_the_general_way(app):
    job, tok = job_with_a_first_call(app)
    app.store.account(job.id, tok, [settle("first")])
    # a key already done returns its entry, reserving nothing
    with round_trips(app) as counted:
        ((value, error),) = app.store.account(job.id, tok, [res("first")])
    assert error is None and isinstance(value, JournalEntry) and value.status == "done"
    assert counted[0] > 1
    # a settlement twice, or by another attempt, is refused and writes nothing
    assert errors(app.store.account(job.id, tok, [settle("first")])) == ["LeaseLost"]
    assert errors(app.store.account(job.id, tok + 1, [res("x")])) == ["LeaseLost"]
    assert len(app.ledger(job.id)) == 1 and app.get(job.id).budget.used.calls == 1
    # usage above the estimate: settled the general way, with its event
    assert errors(app.store.account(job.id, tok, [res("big")])) == [None]
    assert errors(app.store.account(job.id, tok, [settle("big", tin=500)])) == [None]
    assert [r.overrun for r in app.ledger(job.id) if r.key == "big"] == [True]
    assert any(e.kind == "estimate_overrun" for e in app.events(job.id))


def test_a_limit_set_after_the_first_call_is_checked(app):
    job, tok = job_with_a_first_call(app)
    app.set_project_budget("default", {"max_calls": 2})
    out = app.store.account(job.id, tok, [res("a")])
    assert errors(out) == [None]
    ((_, error),) = app.store.account(job.id, tok, [res("b")])
    assert isinstance(error, BudgetExhausted) and error.details["limit"] == "max_calls"
    assert app.project_budget("default").used.reserved_calls == 2


def test_a_cancelled_job_reserves_nothing(app):
    job, tok = job_with_a_first_call(app)
    app.cancel(job.id)
    ((_, error),) = app.store.account(job.id, tok, [res("a")])
    assert isinstance(error, JobCancelled)
    # a call already made is still paid for
    assert errors(app.store.account(job.id, tok, [settle("first")])) == [None]
    assert [e.key for e in app.store.journal(job.id)] == ["first"]


def test_a_lost_lease_writes_nothing(app):
    job, tok = job_with_a_first_call(app)
    ((_, error),) = app.store.account(job.id, tok + 7, [settle("first")])
    assert isinstance(error, LeaseLost)
    assert app.ledger(job.id) == [] and app.get(job.id).budget.used.reserved_calls == 1
