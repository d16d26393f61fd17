"""``tether.testing.invariants`` on every backend: a call the operator chose to pay again (a
retry from a stage) is not reported as paid twice; any other repeat still is."""

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

from tether import Estimate, JobState, PolicyBlock
from tether.providers.simulated import SimulatedProvider
from tether.records import Event
from tether.testing.invariants import failed, repaid_by_retries, run_checks
from tests.contract.test_context import claim_and_run

BILLED_ONCE = "each call billed at most once (unless unconfirmed)"


def _two_stages(app, provider, refuse):
    def call(ctx, key):
        return ctx.call(key=key, provider="simulated", model="sim-small",
                        estimate=Estimate(input_tokens=10, max_output_tokens=20),
                        fn=lambda: provider.complete(key, key=key, max_tokens=20,
                                                     job_id=ctx.id))

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


def test_a_repeat_payment_counts_as_chosen_only_after_a_retry_from_a_stage():
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    first, second = _row(t0), _row(t0 + timedelta(seconds=10))
    between = t0 + timedelta(seconds=5)
    assert repaid_by_retries([first], [])
    assert repaid_by_retries([second, first], [_retry(between, "draft")])
    assert not repaid_by_retries([first, second], [])
    assert not repaid_by_retries([first, second], [_retry(between, None)])  # a plain retry
    assert not repaid_by_retries([first, second],
                                 [_retry(t0 + timedelta(seconds=20), "draft")])  # after both
    third = _row(t0 + timedelta(seconds=30))
    assert not repaid_by_retries([first, second, third], [_retry(between, "draft")])
