"""Every store method that returns a ``Job`` returns what ``get_job`` returns at that moment,
budget accumulators included (issue 21, defect 1) — on every backend."""

from decimal import Decimal

from tether import JobState, Usage
from tether.core.budget import Reservation
from tether.store.base import CallReserve, CallSettle, Outcome

from tests.money import PRICE, reserve, running_job


def spend(app, job, attempt):
    """One call paid (settled) and one left reserved: every accumulator moves."""
    out = app.store.account(job.id, attempt, [
        CallReserve("paid", "s", "simulated", "sim-small", Reservation(Decimal("0.10"), 100, 50)),
        CallReserve("open", "s", "simulated", "sim-small", Reservation(Decimal("0.20"), 80, 30)),
    ])
    out += app.store.account(job.id, attempt, [
        CallSettle("paid", Usage(60, 40), PRICE, "p@1", '{"text": "ok"}')])
    assert [e for _, e in out] == [None, None, None]
    used = app.get(job.id).budget.used
    assert used.spent_usd == PRICE.cost(Usage(60, 40)) and used.reserved_calls == 1


def test_an_idempotent_repeat_returns_exactly_what_get_returns(app):
    job, tok = running_job(app, idempotency_key="K", budget={"max_cost_usd": "5"})
    spend(app, job, tok)
    app.store.finish(job.id, tok, Outcome(JobState.SUCCEEDED, result_json='{"ok": true}'))
    current = app.get(job.id)
    assert current.budget.used.spent_usd > 0

    assert app.submit("t", {}, idempotency_key="K", budget={"max_cost_usd": "5"}) == current
    repeat, created = app.submit_with_status("t", {}, idempotency_key="K",
                                             budget={"max_cost_usd": "5"})
    assert not created and repeat == current
    first, other = app.submit_many([
        {"type": "t", "payload": {}, "idempotency_key": "K", "budget": {"max_cost_usd": "5"}},
        {"type": "t", "payload": {"n": 1}}])
    assert first == current and other.id != job.id


def test_a_repeat_of_a_job_still_running_shows_its_open_reservations(app):
    job, tok = running_job(app, idempotency_key="K")
    reserve(app, job, tok, "k1", cost="0.25")
    repeat = app.submit("t", {}, idempotency_key="K")
    assert repeat == app.get(job.id)
    assert repeat.budget.used.reserved_usd == Decimal("0.25")


def test_listed_and_controlled_jobs_carry_the_same_budget_as_get(app):
    job, tok = running_job(app)
    spend(app, job, tok)
    (listed,) = [j for j in app.store.list_jobs(limit=10) if j.id == job.id]
    assert listed == app.get(job.id)
    assert app.pause(job.id) == app.get(job.id)  # pausing: the lease is still held
    assert app.store.finish(job.id, tok, Outcome(JobState.PAUSED)) == JobState.PAUSED
    assert app.set_budget(job.id, {"max_calls": 9}, resume=False) == app.get(job.id)
    resumed = app.resume(job.id)
    assert resumed == app.get(job.id) and resumed.budget.used.calls == 2  # the open call spent
    assert app.cancel(job.id) == app.get(job.id)


def test_a_reattempt_is_claimed_with_what_it_spent_before(app):
    job, tok = running_job(app, max_attempts=3)
    spend(app, job, tok)
    app.store.finish(job.id, tok, Outcome(JobState.RETRY_WAIT, error_code="transient",
                                          error_summary="boom", delay_s=0))
    assert app.store.promote_due() == 1
    (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
    assert claim.attempt == tok + 1 and not claim.started
    assert claim.job == app.get(job.id)
    assert claim.job.budget.used.calls == 2  # the open call was spent at the attempt's end


def test_a_first_claim_and_a_new_submission_agree_with_get(app):
    app.register("t", lambda ctx, payload: payload)
    new = app.submit("t", {"a": 1}, budget={"max_calls": 4})
    assert new == app.get(new.id)
    (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
    assert claim.job == app.get(new.id)
