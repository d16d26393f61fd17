"""A child's calls count against its ancestors' limits, reserved before each call: a fan-out
cannot overspend the parent (every backend, injected clock)."""

from decimal import Decimal

from tether import Estimate, JobState, Metered, TransientError, Usage

from tests.contract.test_waits import run_next


def _calls(app, made):
    @app.job("worker-call", max_attempts=1)
    def worker_call(ctx, payload):
        out = []
        for i in range(payload["calls"]):
            out.append(ctx.call(key=f"k{i}", provider="simulated", model="sim-small",
                                estimate=Estimate(input_tokens=10, max_output_tokens=10),
                                fn=lambda: made.append(1) or Metered("x", Usage(10, 10))))
        return len(out)

    @app.job("fan")
    def fan(ctx, payload):
        return ctx.map_jobs("worker-call", [{"calls": 2}] * payload["children"],
                            fail="collect")


def test_children_cannot_spend_past_the_parents_call_limit(app):
    made = []
    _calls(app, made)
    parent = app.submit("fan", {"children": 4}, budget={"max_calls": 5})
    for _ in range(6):
        run_next(app)
    assert len(made) == 5, "the sixth call would have crossed the parent's max_calls"
    p = app.get(parent.id)
    assert p.budget.used.calls == 5 and p.budget.used.reserved_calls == 0
    kids = [j for j in app.list(limit=50) if j.parent_id == parent.id]
    paused = [k for k in kids if k.state == JobState.PAUSED]
    assert len(paused) == 2 and {k.error_code for k in paused} == {"budget_exhausted"}
    assert sum(k.budget.used.calls for k in kids) == 5
    assert p.state == JobState.WAITING, "the gather waits for the paused children"
    events = [e for e in app.events(paused[0].id) if e.kind == "budget_exhausted"]
    assert events and events[-1].data["scope"] == "parent"


def test_a_parents_money_limit_holds_across_children_and_releases_return(app):
    made = []
    _calls(app, made)
    limit = Decimal("0.0001")
    parent = app.submit("fan", {"children": 3}, budget={"max_cost_usd": str(limit)})
    for _ in range(5):
        run_next(app)
    p = app.get(parent.id)
    assert p.budget.used.spent_usd <= limit and p.budget.used.reserved_usd == 0
    kids = [j for j in app.list(limit=50) if j.parent_id == parent.id]
    assert sum(k.budget.used.spent_usd for k in kids) == p.budget.used.spent_usd


def test_a_childs_failed_call_releases_its_reservation_on_the_parent(app):
    @app.job("flaky", max_attempts=1)
    def flaky(ctx, payload):
        def boom():
            raise TransientError("timeout", billed=False)
        return ctx.call(key="k", provider="simulated", model="sim-small",
                        estimate=Estimate(input_tokens=10, max_output_tokens=10), fn=boom)

    @app.job("parent-of-flaky")
    def parent_of_flaky(ctx, payload):
        return ctx.gather([ctx.enqueue("flaky", None, key="f")], fail="collect")
    parent = app.submit("parent-of-flaky", budget={"max_calls": 10})
    for _ in range(3):
        run_next(app)
    p = app.get(parent.id)
    assert p.state == JobState.SUCCEEDED
    assert p.budget.used.reserved_calls == 0 and p.budget.used.reserved_usd == 0
