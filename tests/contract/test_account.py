"""``Store.account``: many reservations and settlements of one job in one transaction, each
applied as if it were alone after the ones before it — on every backend."""

from decimal import Decimal

from tether import BudgetExhausted, JobCancelled, JobState, LeaseLost, Usage
from tether.core.budget import Reservation
from tether.errors import TetherError
from tether.records import JournalEntry
from tether.store.base import CallReserve, CallSettle, Outcome

from tests.money import PRICE, running_job

def res(key, cost="0.10", tin=100, tout=50):
    return CallReserve(key, "s", "simulated", "sim-small", Reservation(Decimal(cost), tin, tout))


def settle(key, tin=60, tout=40, refused=False):
    return CallSettle(key, Usage(tin, tout), PRICE, "p@1", '{"text": "ok"}', refused)


def errors(outcomes):
    return [type(e).__name__ if e is not None else None for _, e in outcomes]


def test_limits_count_every_reservation_before_it_in_the_batch(app):
    job, tok = running_job(app, budget={"max_calls": 3})
    out = app.store.account(job.id, tok, [res(f"k{i}") for i in range(5)])
    assert errors(out) == [None, None, None, "BudgetExhausted", "BudgetExhausted"]
    assert out[3][1].details["limit"] == "max_calls"
    used = app.get(job.id).budget.used
    assert used.reserved_calls == 3 and used.reserved_usd == Decimal("0.30")
    assert [e.key for e in app.store.journal(job.id)] == ["k0", "k1", "k2"]
    assert app.project_budget("default").used.reserved_calls == 3


def test_a_settlement_frees_room_for_a_reservation_after_it(app):
    job, tok = running_job(app, budget={"max_cost_usd": "0.15"})
    assert errors(app.store.account(job.id, tok, [res("a")])) == [None]
    out = app.store.account(job.id, tok, [res("b"), settle("a", 10, 10), res("c")])
    # b: 0.10 reserved + 0.10 -> 0.20 > 0.15; after a settles (cost 0.00002) c fits
    assert errors(out) == ["BudgetExhausted", None, None]
    entries = {e.key: e.status for e in app.store.journal(job.id)}
    assert entries == {"a": "done", "c": "reserved"}
    used = app.get(job.id).budget.used
    assert used.calls == 1 and used.reserved_calls == 1
    assert used.spent_usd == PRICE.cost(Usage(10, 10))
    assert len(app.ledger(job.id)) == 1


def test_settle_many_writes_one_ledger_row_each_and_moves_reserved_to_spent(app):
    job, tok = running_job(app)
    keys = [f"k{i}" for i in range(6)]
    assert errors(app.store.account(job.id, tok, [res(k) for k in keys])) == [None] * 6
    assert errors(app.store.account(job.id, tok, [settle(k) for k in keys])) == [None] * 6
    used = app.get(job.id).budget.used
    assert used.reserved_calls == 0 and used.reserved_usd == 0 and used.calls == 6
    assert used.input_tokens == 360 and used.output_tokens == 240
    assert used.spent_usd == 6 * PRICE.cost(Usage(60, 40))
    ledger = app.ledger(job.id)
    assert sorted(r.key for r in ledger) == keys and all(r.confirmed for r in ledger)
    assert all(e.status == "done" and e.result == {"text": "ok"}
               for e in app.store.journal(job.id))


def test_a_key_twice_in_one_batch_fails_the_second(app):
    job, tok = running_job(app)
    out = app.store.account(job.id, tok, [res("k"), res("k")])
    assert errors(out) == [None, "TetherError"]
    assert "already in flight" in str(out[1][1])
    assert app.get(job.id).budget.used.reserved_calls == 1


def test_a_key_settled_earlier_in_the_batch_is_returned_not_reserved(app):
    job, tok = running_job(app)
    app.store.account(job.id, tok, [res("k")])
    (_, e1), (entry, e2) = app.store.account(job.id, tok, [settle("k"), res("k")])
    assert e1 is None and e2 is None
    assert isinstance(entry, JournalEntry) and entry.status == "done"
    assert entry.result == {"text": "ok"} and entry.usage["input_tokens"] == 60
    assert app.get(job.id).budget.used.reserved_calls == 0


def test_a_done_key_is_returned_with_its_full_entry(app):
    job, tok = running_job(app)
    app.store.account(job.id, tok, [res("k")])
    app.store.account(job.id, tok, [settle("k")])
    ((entry, exc),) = app.store.account(job.id, tok, [res("k")])
    assert exc is None and entry.status == "done" and entry.result == {"text": "ok"}
    assert entry.cost_usd == PRICE.cost(Usage(60, 40)) and entry.created_at is not None


def test_a_lost_lease_fails_every_op_and_writes_nothing(app):
    job, tok = running_job(app)
    app.store.account(job.id, tok, [res("a")])
    out = app.store.account(job.id, tok + 1, [res("b"), settle("a")])
    assert errors(out) == ["LeaseLost", "LeaseLost"]
    assert [e.key for e in app.store.journal(job.id)] == ["a"]
    assert isinstance(out[0][1], LeaseLost)


def test_a_cancelled_job_reserves_nothing_but_settles_calls_in_flight(app):
    job, tok = running_job(app)
    app.store.account(job.id, tok, [res("a")])
    app.cancel(job.id)
    out = app.store.account(job.id, tok, [settle("a"), res("b")])
    assert errors(out) == [None, "JobCancelled"]
    assert isinstance(out[1][1], JobCancelled)
    assert {e.key: e.status for e in app.store.journal(job.id)} == {"a": "done"}


def test_an_overrun_in_a_batch_is_recorded_with_its_event(app):
    job, tok = running_job(app)
    app.store.account(job.id, tok, [res("a", tin=10, tout=10), res("b")])
    out = app.store.account(job.id, tok, [settle("a", 10, 30), settle("b")])
    assert errors(out) == [None, None]
    overruns = {r.key: r.overrun for r in app.ledger(job.id)}
    assert overruns == {"a": True, "b": False}
    (event,) = [e for e in app.events(job.id) if e.kind == "estimate_overrun"]
    assert event.data["key"] == "a" and event.data["usage"]["output_tokens"] == 30


def test_a_refused_settlement_is_paid_and_journaled_failed(app):
    job, tok = running_job(app)
    app.store.account(job.id, tok, [res("a")])
    assert errors(app.store.account(job.id, tok, [settle("a", refused=True)])) == [None]
    (entry,) = app.store.journal(job.id)
    assert entry.status == "failed" and entry.error_code == "policy_block"
    assert app.get(job.id).budget.used.calls == 1
    out = app.store.account(job.id, tok, [res("a")])  # an operator's retry may ask again
    assert errors(out) == [None]


def test_an_earlier_attempts_open_reservation_is_spent_unconfirmed_then_reserved_again(app):
    job, tok = running_job(app)
    app.store.account(job.id, tok, [res("a", cost="0.20")])
    with app.store._write() as tx:  # a re-lease that left the reservation open
        tx.conn.execute(f"UPDATE jobs SET lease_attempt = lease_attempt + 1 WHERE id = {job.id}")
    ((value, exc),) = app.store.account(job.id, tok + 1, [res("a", cost="0.20")])
    assert exc is None and value is None
    used = app.get(job.id).budget.used
    assert used.spent_usd == Decimal("0.20") and used.reserved_usd == Decimal("0.20")
    assert used.calls == 1 and used.reserved_calls == 1
    assert [(r.attempt, r.confirmed) for r in app.ledger(job.id)] == [(tok, False)]
    (entry,) = app.store.journal(job.id)
    assert entry.status == "reserved" and entry.attempt == tok + 1


def test_the_first_call_creates_the_accumulator_rows(app):
    job, tok = running_job(app, budget={"max_calls": 1})
    out = app.store.account(job.id, tok, [res("a"), res("b")])
    assert errors(out) == [None, "BudgetExhausted"]
    assert isinstance(out[1][1], BudgetExhausted) and out[1][1].details["scope"] == "job"


def test_a_missing_job_is_a_lost_lease(app):
    out = app.store.account(999_999, 1, [res("a")])
    assert errors(out) == ["LeaseLost"]


def test_the_single_op_wrappers_raise_what_account_reports(app):
    job, tok = running_job(app)
    assert app.store.reserve(job.id, tok, key="k", stage=None, provider="simulated",
                             model="sim-small",
                             reservation=Reservation(Decimal("0.1"), 10, 10)) is None
    try:
        app.store.reserve(job.id, tok, key="k", stage=None, provider="simulated",
                          model="sim-small", reservation=Reservation(Decimal("0.1"), 10, 10))
    except TetherError as exc:
        assert "already in flight" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a key in flight was reserved twice")


def test_a_key_reserved_and_settled_in_one_batch_ends_done(app):
    job, tok = running_job(app)
    assert errors(app.store.account(job.id, tok, [res("k"), settle("k")])) == [None, None]
    assert [(e.key, e.status) for e in app.store.journal(job.id)] == [("k", "done")]
    # The attempt's end finds nothing open: the call is not spent a second time.
    app.store.finish(job.id, tok, Outcome(JobState.SUCCEEDED, result_json="{}"))
    used = app.get(job.id).budget.used
    assert (used.calls, used.reserved_calls, used.reserved_usd) == (1, 0, 0)
    assert used.spent_usd == PRICE.cost(Usage(60, 40))
    assert [r.confirmed for r in app.ledger(job.id)] == [True]


def test_a_refused_key_asked_again_in_one_batch_is_journaled_in_order(app):
    job, tok = running_job(app)
    out = app.store.account(job.id, tok, [res("k"), settle("k", refused=True), res("k"),
                                          settle("k")])
    assert errors(out) == [None, None, None, None]
    (entry,) = app.store.journal(job.id)
    assert entry.status == "done" and entry.result == {"text": "ok"}
    app.store.finish(job.id, tok, Outcome(JobState.SUCCEEDED, result_json="{}"))
    used = app.get(job.id).budget.used
    assert (used.calls, used.reserved_calls) == (2, 0)
    assert used.spent_usd == 2 * PRICE.cost(Usage(60, 40))


def test_account_many_applies_each_jobs_calls_as_account_would(app):
    a, ta = running_job(app)
    b, tb = running_job(app, budget={"max_calls": 1})
    c, tc = running_job(app)
    for job, tok in ((a, ta), (b, tb)):  # their accumulators exist: they go together
        app.store.account(job.id, tok, [res("first")])
    out = app.store.account_many([
        (a.id, ta, [settle("first"), res("next")]),
        (b.id, tb, [res("over")]),            # b's limit: one call, already reserved
        (c.id, tc, [res("k")]),               # c's first call: written alone
        (a.id, 999, [res("stale")]),          # a again, with a lost lease: alone, fails
    ])
    assert [errors(o) for o in out] == [[None, None], ["BudgetExhausted"], [None],
                                        ["LeaseLost"]]
    assert {e.key: e.status for e in app.store.journal(a.id)} == {"first": "done",
                                                                 "next": "reserved"}
    assert [e.key for e in app.store.journal(b.id)] == ["first"]
    assert [e.key for e in app.store.journal(c.id)] == ["k"]
    used = app.get(a.id).budget.used
    assert used.calls == 1 and used.reserved_calls == 1
    assert len(app.ledger(a.id)) == 1
    assert app.project_budget("default").used.reserved_calls == 3  # a, b, c: one each
