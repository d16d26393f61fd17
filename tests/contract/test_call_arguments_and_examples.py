"""Every budget dimension holds before money is spent (max_examples too), and a call's bad
arguments fail the job as ``invalid_call`` before anything is reserved — on every backend."""

from tether import Budget, Estimate, JobState
from tether.job import Lease
from tether.providers.simulated import SimulatedProvider, read_bill
from tether.worker.executor import execute

S = JobState
ESTIMATE = Estimate(input_tokens=10, max_output_tokens=50)


def claim_and_run(app):
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(c.job.id)


def test_max_examples_refuses_the_call_before_the_provider_is_paid(app, tmp_path):
    bill = tmp_path / "bill.jsonl"
    provider = SimulatedProvider(bill)

    @app.job("generate")
    def generate(ctx, payload):
        for i in range(5):
            ctx.call(key=f"g{i}", provider="simulated", model="sim-small", estimate=ESTIMATE,
                     fn=lambda i=i: provider.complete(f"example {i}", key=f"g{i}",
                                                      max_tokens=50, job_id=ctx.id))
            ctx.add_examples(1)
        return "all five"

    job = app.submit("generate", {}, budget=Budget(max_examples=2))
    got = claim_and_run(app)
    assert len(read_bill(bill)) == 2, "the provider was paid for a third example"
    assert got.state == S.PAUSED and got.error_code == "budget_exhausted"
    used = got.budget.used
    assert (used.examples, used.calls, used.reserved_calls) == (2, 2, 0)
    assert [e.key for e in app.journal(job.id)] == ["g0", "g1"]


def test_a_project_examples_limit_also_holds_before_the_call(app, tmp_path):
    bill = tmp_path / "bill.jsonl"
    provider = SimulatedProvider(bill)
    app.set_project_budget("p", max_examples=1)

    @app.job("one_each")
    def one_each(ctx, payload):
        ctx.call(key="g", provider="simulated", model="sim-small", estimate=ESTIMATE,
                 fn=lambda: provider.complete("x", key=f"g{ctx.id}", job_id=ctx.id))
        ctx.add_examples(1)

    first, second = (app.submit("one_each", {"n": n}, project="p") for n in (1, 2))
    assert claim_and_run(app).state == S.SUCCEEDED
    got = claim_and_run(app)
    assert got.id == second.id and got.state == S.PAUSED
    assert got.error_code == "budget_exhausted"
    assert [line.job_id for line in read_bill(bill)] == [first.id]


def test_cache_without_request_fails_as_invalid_call_before_any_reservation(app):
    made = []

    @app.job("cached")
    def cached(ctx, payload):
        return ctx.call(key="k", provider="simulated", model="sim-small", estimate=ESTIMATE,
                        cache=True, fn=lambda: made.append(1))

    job = app.submit("cached", {})
    got = claim_and_run(app)
    assert got.state == S.FAILED and got.error_code == "invalid_call"
    assert "request=" in got.error_summary
    assert made == [] and app.journal(job.id) == [] and app.ledger(job.id) == []
    assert got.budget.used.reserved_calls == 0 and got.budget.used.calls == 0
