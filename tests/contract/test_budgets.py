"""Reserve, settle, release, orphans and limits — the money path, on every backend."""

from dataclasses import replace
from decimal import Decimal

import pytest

from tether import BudgetExhausted, JobCancelled, JobState, LeaseLost, Usage
from tether.errors import TetherError
from tether.store.base import Outcome

from tests.money import PRICE, reserve, running_job

S = JobState


def test_reserve_then_settle_moves_reserved_to_spent(app):
    job, tok = running_job(app, budget={"max_cost_usd": "1"})
    assert reserve(app, job, tok, "k1") is None
    used = app.get(job.id).budget.used
    assert used.reserved_usd == Decimal("0.10") and used.reserved_calls == 1
    entry = app.store.settle(job.id, tok, key="k1", usage=Usage(80, 40, 20, 5), price=PRICE,
                             profile_id="p@1", result_json='{"text": "hi"}')
    expected = (60 * Decimal("0.50") + 20 * Decimal("0.25") + 40 * Decimal("1.50")) / 10**6
    assert entry.cost_usd == expected and entry.confirmed and not entry.overrun
    used = app.get(job.id).budget.used
    assert used.reserved_usd == 0 and used.spent_usd == expected and used.calls == 1
    assert used.input_tokens == 80 and used.output_tokens == 40
    (row,) = app.ledger(job.id)
    assert (row.key, row.cached_input_tokens, row.reasoning_tokens) == ("k1", 20, 5)
    assert row.input_per_mtok == Decimal("0.50") and row.price_profile == "p@1"
    assert app.project_budget("default").used.spent_usd == expected


def test_cache_writes_are_billed_at_their_rates_and_kept_in_the_ledger(app):
    price = replace(PRICE, cache_write_per_mtok=Decimal("0.625"),
                    cache_write_1h_per_mtok=Decimal("1.00"))
    job, tok = running_job(app)
    reserve(app, job, tok, "k")
    usage = Usage(input_tokens=100, output_tokens=10, cached_input_tokens=20,
                  cache_write_tokens=50, cache_write_1h_tokens=10)
    entry = app.store.settle(job.id, tok, key="k", usage=usage, price=price, profile_id="p",
                             result_json='"ok"')
    expected = (30 * Decimal("0.50") + 20 * Decimal("0.25") + 40 * Decimal("0.625")
                + 10 * Decimal("1.00") + 10 * Decimal("1.50")) / 10**6
    (row,) = app.ledger(job.id)
    assert entry.cost_usd == row.cost_usd == expected
    assert (row.cache_write_tokens, row.cache_write_1h_tokens) == (50, 10)
    assert (row.cache_write_per_mtok, row.cache_write_1h_per_mtok) == (Decimal("0.625"),
                                                                       Decimal("1.00"))
    assert app.store.journal(job.id, "k")[0].usage["cache_write_tokens"] == 50
    reserve(app, job, tok, "plain")
    app.store.settle(job.id, tok, key="plain", usage=Usage(1, 1), price=PRICE, profile_id="p",
                     result_json='"ok"')
    plain = app.ledger(job.id)[1]
    assert plain.cache_write_tokens == 0 and plain.cache_write_per_mtok is None


def test_a_done_key_is_returned_not_reserved_again(app):
    job, tok = running_job(app)
    reserve(app, job, tok, "k")
    app.store.settle(job.id, tok, key="k", usage=Usage(1, 1), price=PRICE, profile_id="p",
                     result_json='"first"')
    entry = reserve(app, job, tok, "k")
    assert entry.status == "done" and entry.result == "first"
    assert app.get(job.id).budget.used.reserved_calls == 0
    assert len(app.ledger(job.id)) == 1


def test_reservation_that_would_cross_a_limit_is_refused_and_writes_nothing(app):
    job, tok = running_job(app, budget={"max_cost_usd": "0.25", "max_calls": 5})
    reserve(app, job, tok, "a", cost="0.10")
    reserve(app, job, tok, "b", cost="0.10")
    with pytest.raises(BudgetExhausted) as info:
        reserve(app, job, tok, "c", cost="0.10")
    assert info.value.details["limit"] == "max_cost_usd"
    assert app.get(job.id).budget.used.reserved_usd == Decimal("0.20")
    assert [e.key for e in app.store.journal(job.id)] == ["a", "b"]


def test_project_limit_is_shared_by_jobs(app):
    app.set_project_budget("p", max_cost_usd="0.15")
    job, tok = running_job(app, project="p")
    reserve(app, job, tok, "a", cost="0.10")
    with pytest.raises(BudgetExhausted) as info:
        reserve(app, job, tok, "b", cost="0.10")
    assert info.value.details["scope"] == "project"


def test_release_refunds_a_refused_call_but_counts_an_unknown_one(app):
    job, tok = running_job(app)
    reserve(app, job, tok, "refused", cost="0.10")
    app.store.release(job.id, tok, key="refused", error_code="transient", error_summary="429",
                      billed=False)
    used = app.get(job.id).budget.used
    assert used.reserved_usd == 0 and used.spent_usd == 0 and used.calls == 0
    reserve(app, job, tok, "timeout", cost="0.10")
    app.store.release(job.id, tok, key="timeout", error_code="transient", error_summary="t/o",
                      billed=None)
    used = app.get(job.id).budget.used
    assert used.reserved_usd == 0 and used.spent_usd == Decimal("0.10")
    (row,) = app.ledger(job.id)
    assert row.key == "timeout" and not row.confirmed and row.cost_usd == Decimal("0.10")
    # both keys may be called again: a refused call never happened, an unknown one is paid
    assert reserve(app, job, tok, "refused") is None
    assert reserve(app, job, tok, "timeout") is None


def test_a_crashed_attempts_open_reservation_is_settled_as_spent_unconfirmed(app, clock):
    job, tok = running_job(app)
    reserve(app, job, tok, "in-flight", cost="0.30", tin=300, tout=100)
    clock.advance(31)
    app.store.expire_leases()
    used = app.get(job.id).budget.used
    assert used.reserved_usd == 0 and used.spent_usd == Decimal("0.30") and used.calls == 1
    (row,) = app.ledger(job.id)
    assert not row.confirmed and row.input_tokens == 300
    (entry,) = app.store.journal(job.id)
    assert entry.status == "unconfirmed"
    (c,) = app.store.claim("w2", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, c.attempt)
    assert reserve(app, job, c.attempt, "in-flight", cost="0.30") is None


def test_no_reservation_after_cancel_and_none_with_a_stale_lease(app, clock):
    job, tok = running_job(app)
    app.cancel(job.id)
    with pytest.raises(JobCancelled):
        reserve(app, job, tok, "k")
    assert app.store.journal(job.id) == []
    job2, tok2 = running_job(app)
    with pytest.raises(LeaseLost):
        reserve(app, job2, tok2 + 1, "k")


def test_finish_settles_reservations_still_open(app):
    job, tok = running_job(app)
    reserve(app, job, tok, "k", cost="0.05")
    app.store.finish(job.id, tok, Outcome(S.FAILED, error_code="x", error_summary="y"))
    assert app.get(job.id).budget.used.spent_usd == Decimal("0.05")


def test_overrun_is_recorded_and_reported(app):
    job, tok = running_job(app)
    reserve(app, job, tok, "k", tin=10, tout=10)
    entry = app.store.settle(job.id, tok, key="k", usage=Usage(10, 30), price=PRICE,
                             profile_id="p", result_json="1")
    assert entry.overrun
    assert app.events(job.id)[-1].kind == "estimate_overrun"


def test_examples_limit(app):
    job, tok = running_job(app, budget={"max_examples": 3})
    assert app.store.add_examples(job.id, tok, 2) == 2
    with pytest.raises(BudgetExhausted):
        app.store.add_examples(job.id, tok, 2)
    assert app.get(job.id).budget.used.examples == 2


def test_spend_totals_by_model(app):
    job, tok = running_job(app)
    for k in ("a", "b"):
        reserve(app, job, tok, k)
        app.store.settle(job.id, tok, key=k, usage=Usage(1000, 1000), price=PRICE,
                         profile_id="p", result_json="1")
    (row,) = app.spend_totals()
    assert row["calls"] == 2 and row["cost_usd"] == Decimal("0.004")


def test_checkpoints_need_the_lease(app):
    job, tok = running_job(app)
    app.store.put_blob("ab" * 32, b'"x"')
    cp = app.store.save_checkpoint(job.id, tok, stage="one", position=1, blob="ab" * 32, size=3)
    assert cp.stage == "one" and app.store.get_blob("ab" * 32) == b'"x"'
    with pytest.raises(LeaseLost):
        app.store.save_checkpoint(job.id, tok + 7, stage="two", position=2, blob="ab" * 32,
                                  size=3)
    assert [c.stage for c in app.checkpoints(job.id)] == ["one"]


def test_concurrent_reservations_never_cross_job_or_project_limits(app):
    """Threads reserving at once (the first calls of two jobs: their budget rows do not exist
    yet) are admitted exactly up to the tighter limit, on every backend."""
    import threading

    app.set_project_budget("default", {"max_calls": 30}, resume=False)
    jobs = [running_job(app, budget={"max_calls": 20, "max_cost_usd": "2.50"})
            for _ in range(2)]
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        job, tok = jobs[n % 2]
        start.wait()
        for i in range(6):
            try:
                reserve(app, job, tok, f"t{n}-{i}")
                got = "ok"
            except BudgetExhausted:
                got = "refused"
            with lock:
                outcomes.append(got)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("ok") == 30  # 48 asked; project max_calls 30 binds first
    per_job = [app.get(job.id).budget.used for job, _ in jobs]
    assert all(u.reserved_calls <= 20 and u.reserved_usd <= Decimal("2.50") for u in per_job)
    assert sum(u.reserved_calls for u in per_job) == 30
    assert app.project_budget("default").used.reserved_calls == 30
    assert sum(len(app.journal(job.id)) for job, _ in jobs) == 30


def test_a_key_reserved_twice_in_one_attempt_is_refused_and_reserves_once(app):
    job, tok = running_job(app)
    reserve(app, job, tok, "k")
    with pytest.raises(TetherError, match="already in flight"):
        reserve(app, job, tok, "k")
    assert app.get(job.id).budget.used.reserved_calls == 1


def test_settle_with_a_stale_lease_or_an_unreserved_key_writes_nothing(app):
    job, tok = running_job(app)
    reserve(app, job, tok, "k")
    with pytest.raises(LeaseLost):
        app.store.settle(job.id, tok + 1, key="k", usage=Usage(1, 1), price=PRICE,
                         profile_id="p", result_json='"x"')
    with pytest.raises(LeaseLost):
        app.store.settle(job.id, tok, key="other", usage=Usage(1, 1), price=PRICE,
                         profile_id="p", result_json='"x"')
    used = app.get(job.id).budget.used
    assert used.reserved_calls == 1 and used.calls == 0 and app.ledger(job.id) == []
