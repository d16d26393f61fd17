"""``tether.testing.invariants`` on every backend: a call the operator chose to pay again (a
retry from a stage, which records a ``call_repaid`` event per answer it drops) is not reported
as paid twice; any other repeat still is, a retry between the payments or not."""

from collections import Counter
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

from tether import Estimate, JobState, PolicyBlock
from tether.providers.simulated import SimulatedProvider, read_bill
from tether.records import Event
from tether.testing.invariants import describe, failed, repaid_on_purpose, run_checks
from tests.contract.test_context import claim_and_run

BILLED_ONCE = "each call billed at most once (unless unconfirmed)"


def _caller(provider):
    """``call(ctx, key)``: one journaled call to ``provider``, billed to the job."""
    def call(ctx, key):
        return ctx.call(key=key, provider="simulated", model="sim-small",
                        estimate=Estimate(input_tokens=10, max_output_tokens=20),
                        fn=lambda: provider.complete(key, key=key, max_tokens=20,
                                                     job_id=ctx.id))
    return call


def _two_stages(app, provider, refuse):
    call = _caller(provider)

    def draft(ctx, value):
        return call(ctx, "draft-0")

    def review(ctx, value):
        call(ctx, "review-0")
        if refuse:
            refuse.pop()
            raise PolicyBlock("review refused")
        return value

    app.pipeline("two", [draft, review])


def test_a_retry_from_a_stage_pays_again_without_breaking_the_billing_invariant(app, tmp_path):
    bill = tmp_path / "bill.jsonl"
    _two_stages(app, SimulatedProvider(bill), refuse=[True])
    job = app.submit("two", {})
    assert claim_and_run(app).state == JobState.FAILED
    app.retry(job.id, from_stage="draft")  # both stages again: their calls are paid again
    assert claim_and_run(app).state == JobState.SUCCEEDED
    confirmed = [r.key for r in app.ledger(job.id) if r.confirmed]
    assert sorted(confirmed) == ["draft-0", "draft-0", "review-0", "review-0"]

    problems = {c.name: c.problems for c in run_checks(app, bill_path=bill)}
    assert problems[BILLED_ONCE] == []
    assert failed(run_checks(app, bill_path=bill)) == []


def _row(at):
    return SimpleNamespace(confirmed=True, created_at=at)


def _retry(at, from_stage):
    data = {"action": "retry"} | ({"from_stage": from_stage} if from_stage else {})
    return Event(job_id=1, seq=5, at=at, kind="retry", from_state="failed", to_state="queued",
                 attempt=None, data=data)


def _repaid(at, key):
    return Event(job_id=1, seq=4, at=at, kind="call_repaid", from_state=None, to_state=None,
                 attempt=None, data={"key": key, "from_stage": "draft"})


def test_a_repeat_payment_counts_as_chosen_only_after_that_keys_call_repaid_event():
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    first, second = _row(t0), _row(t0 + timedelta(seconds=10))
    between = t0 + timedelta(seconds=5)
    assert repaid_on_purpose([first], [], "k")
    assert repaid_on_purpose([second, first], [_repaid(between, "k")], "k")
    assert not repaid_on_purpose([first, second], [], "k")
    assert not repaid_on_purpose([first, second], [_retry(between, None)], "k")
    # A retry from a stage excuses only the keys it dropped (it names each in a call_repaid).
    assert not repaid_on_purpose([first, second], [_retry(between, "draft")], "k")
    assert not repaid_on_purpose([first, second], [_repaid(between, "other")], "k")
    assert not repaid_on_purpose([first, second],
                                 [_repaid(t0 + timedelta(seconds=20), "k")], "k")  # after both
    third = _row(t0 + timedelta(seconds=30))
    assert not repaid_on_purpose([first, second, third], [_repaid(between, "k")], "k")
    same = [_row(t0)] * 3  # one instant (an unadvanced clock): one event per repeat
    assert not repaid_on_purpose(same, [_repaid(t0, "k")], "k")
    assert repaid_on_purpose(same, [_repaid(t0, "k"), _repaid(t0, "k")], "k")


def _three_stages(app, provider, refuse):
    """A call ``plan`` before any stage, then stages a, b, c, each paying one call; c refuses
    (after its call) while ``refuse``."""
    call = _caller(provider)

    def stage(ctx, name):
        call(ctx, f"{name}-0")
        if name == "c" and refuse:
            raise PolicyBlock("c refused")
        return name

    @app.job("abc")
    def abc(ctx, payload):
        call(ctx, "plan")
        return [ctx.stage(name, lambda name=name: stage(ctx, name)) for name in "abc"]


def _retried_from_b(app, clock, bill, lose=None):
    """Run the three-stage job to its failure in c, retry it from b (having forged the loss
    of ``lose``'s journaled answer, if given) and run it to success."""
    refuse = [True]
    _three_stages(app, SimulatedProvider(bill), refuse)
    job = app.submit("abc", {})
    assert claim_and_run(app).state == JobState.FAILED
    clock.advance(60)
    refuse.clear()
    app.retry(job.id, from_stage="b")
    if lose is not None:
        with app.store._write() as tx:
            tx.run("journal_supersede", job_id=job.id, key=lose, now=clock.time())
    clock.advance(60)
    assert claim_and_run(app).state == JobState.SUCCEEDED
    return job


def test_a_retry_from_the_middle_stage_leaves_a_ledger_the_checker_accepts(app, clock,
                                                                           tmp_path):
    bill = tmp_path / "bill.jsonl"
    job = _retried_from_b(app, clock, bill)
    billed = Counter(b.key for b in read_bill(bill) if b.job_id == job.id)
    assert billed == {"plan": 1, "a-0": 1, "b-0": 2, "c-0": 2}
    ledger = app.ledger(job.id)
    assert Counter(r.key for r in ledger if r.confirmed) == billed
    assert sum(r.cost_usd for r in ledger) == sum(b.cost_usd for b in read_bill(bill))
    assert app.get(job.id).budget.used.spent_usd == sum(r.cost_usd for r in ledger)
    repaid = [e.data["key"] for e in app.events(job.id) if e.kind == "call_repaid"]
    assert sorted(repaid) == ["b-0", "c-0"]
    checks = run_checks(app, bill_path=bill)
    assert failed(checks) == [], describe(checks)


def test_a_key_a_retry_from_a_stage_kept_is_still_reported_when_paid_again(app, clock,
                                                                           tmp_path):
    """The retry re-pays b and c on purpose; ``plan`` (before any stage) is kept. An engine
    that lost ``plan``'s answer (forged here) would pay it again after the retry: that is a
    call paid twice, whatever retry came between."""
    bill = tmp_path / "bill.jsonl"
    job = _retried_from_b(app, clock, bill, lose="plan")
    assert Counter(b.key for b in read_bill(bill))["plan"] == 2
    problems = {c.name: c.problems for c in run_checks(app, bill_path=bill)}
    assert problems[BILLED_ONCE] == [f"job {job.id} call 'plan': 2 confirmed ledger rows"]
