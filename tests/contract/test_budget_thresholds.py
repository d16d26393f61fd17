"""Budget thresholds: each fraction of a job's, a parent's or a project's limit fires once, as a
``budget_threshold`` event on the job whose settled call crossed it and a row in the
project's crossings; a periodic budget fires again in its next period; a call left open by a
crash counts once; a soft budget alerts and never pauses. Every backend, injected clock."""

from datetime import datetime, timezone
from decimal import Decimal

import pytest

from tether import Estimate, InvalidPayload, JobState, Metered, Usage
from tether.core.budget import Budget, Reservation
from tether.core.periods import window
from tether.core.pricing import ModelPrice
from tether.wire.thresholds import ThresholdEventData

from tests.contract.test_waits import run_next

UTC = timezone.utc


def _steady(app, made=None):
    sink = [] if made is None else made

    @app.job("steady", max_attempts=3)
    def steady(ctx, payload):
        for i in range(payload["calls"]):
            ctx.call(key=f"k{i}", provider="simulated", model="sim-small",
                     estimate=Estimate(input_tokens=10, max_output_tokens=10),
                     fn=lambda i=i: sink.append(i) or Metered("x", Usage(10, 10)))
        return payload["calls"]


def _fired(app, job_id):
    """The data of the job's ``budget_threshold`` events, each checked against its schema."""
    found = [e.data for e in app.events(job_id) if e.kind == "budget_threshold"]
    for data in found:
        assert ThresholdEventData.model_validate(data).model_dump() == data
    return found


def test_each_threshold_of_a_job_budget_fires_once_at_its_call(app):
    _steady(app)
    job = app.submit("steady", {"calls": 10}, budget={"max_calls": 10,
                                                      "thresholds": [0.5, 0.8, 1]})
    assert run_next(app).state == JobState.SUCCEEDED
    fired = _fired(app, job.id)
    assert [(d["threshold"], d["used"]) for d in fired] == [(0.5, 5), (0.8, 8), (1.0, 10)]
    assert fired[0] == {"scope": "job", "project": "default", "budget": str(job.id),
                        "metric": "calls", "limit_name": "max_calls", "threshold": 0.5,
                        "limit": 10, "used": 5, "period_start": None}
    rows = app.budget_crossings("default", scope="job", key=str(job.id))
    assert sorted(r.threshold for r in rows) == [0.5, 0.8, 1.0]
    assert {r.job_id for r in rows} == {job.id}
    assert app.store.engine_stats()["budget_thresholds_total"] == 3


def test_money_and_token_limits_fire_with_their_metric(app):
    _steady(app)
    # each call: 10 in + 10 out tokens; sim-small's price makes it cost a fixed amount
    app.set_project_budget("p", max_input_tokens=100, max_cost_usd="1",
                           thresholds=[0.3])
    job = app.submit("steady", {"calls": 4}, project="p")
    run_next(app)
    fired = _fired(app, job.id)
    assert [(d["metric"], d["limit_name"], d["used"]) for d in fired] == [
        ("tokens", "max_input_tokens", 30)]
    assert app.project_budget("p").limits.thresholds == (0.3,)


def test_a_soft_budget_alerts_past_its_limit_and_never_pauses(app):
    made = []
    _steady(app, made)
    job = app.submit("steady", {"calls": 5}, budget={"max_calls": 2, "soft": True,
                                                     "thresholds": [1, 2]})
    app.set_project_budget("default", max_calls=1, soft=True)
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and made == [0, 1, 2, 3, 4]
    assert [(d["threshold"], d["used"]) for d in _fired(app, job.id)] == [(1.0, 2), (2.0, 4)]
    assert done.budget.limits.soft is True
    assert not [e for e in app.events(job.id) if e.kind == "budget_exhausted"]


def test_a_hard_budget_still_pauses_and_its_thresholds_fired_before(app):
    made = []
    _steady(app, made)
    job = app.submit("steady", {"calls": 5}, budget={"max_calls": 4, "thresholds": [0.5]})
    paused = run_next(app)
    assert paused.state == JobState.PAUSED and made == [0, 1, 2, 3]
    assert [d["used"] for d in _fired(app, job.id)] == [2]


def test_a_periodic_project_budget_fires_again_in_its_next_period(app, clock):
    _steady(app)
    clock.set(datetime(2026, 3, 10, 12, 0, tzinfo=UTC))
    app.set_project_budget("d", max_calls=4, period="day", thresholds=[0.5, 1])
    first = app.submit("steady", {"calls": 4}, project="d")
    run_next(app)
    day1 = window(clock.now().timestamp(), "day").start
    assert [(d["threshold"], d["scope"], d["period_start"]) for d in _fired(app, first.id)] \
        == [(0.5, "project", day1), (1.0, "project", day1)]
    clock.set(datetime(2026, 3, 11, 9, 0, tzinfo=UTC))
    second = app.submit("steady", {"calls": 3}, project="d")
    run_next(app)
    day2 = window(clock.now().timestamp(), "day").start
    assert [(d["threshold"], d["period_start"]) for d in _fired(app, second.id)] == [(0.5, day2)]
    rows = app.budget_crossings("d", scope="project")
    assert [(r.period, r.threshold) for r in rows] == [
        ("day:2026-03-11", 0.5), ("day:2026-03-10", 0.5), ("day:2026-03-10", 1.0)]


def test_a_parent_budget_fires_on_the_child_whose_call_crossed_it(app):
    @app.job("child")
    def child(ctx, payload):
        ctx.call(key="c", provider="simulated", model="sim-small",
                 estimate=Estimate(input_tokens=10, max_output_tokens=10),
                 fn=lambda: Metered("x", Usage(10, 10)))

    @app.job("parent")
    def parent(ctx, payload):
        return ctx.map_jobs("child", [{}] * 4)

    job = app.submit("parent", {}, budget={"max_calls": 4, "thresholds": [0.5]})
    for _ in range(6):
        run_next(app)
    rows = app.budget_crossings("default", scope="job", key=str(job.id))
    assert len(rows) == 1 and rows[0].job_id != job.id
    assert [d["budget"] for d in _fired(app, rows[0].job_id)] == [str(job.id)]


def test_a_call_left_open_by_a_crash_counts_once(app, clock):
    """Reserved, then the attempt's lease expires before it settles: the orphan is spent in
    full where the attempt ends, and that is the one crossing; the next attempt's settlement
    of the same key cannot fire it again."""
    store = app.store
    _steady(app)
    job = app.submit("steady", {"calls": 1}, budget={"max_calls": 2, "thresholds": [0.5]})
    (claim,) = store.claim("w", queues=None, limit=1, lease_ttl=10, start=True)
    want = Reservation(Decimal("0.001"), 10, 10)
    store.reserve(job.id, claim.attempt, key="k0", stage=None, provider="simulated",
                  model="sim-small", reservation=want)
    assert _fired(app, job.id) == []
    clock.advance(60)
    store.expire_leases()
    fired = _fired(app, job.id)
    assert [(d["threshold"], d["used"]) for d in fired] == [(0.5, 1)]
    (again,) = store.claim("w", queues=None, limit=1, lease_ttl=10)
    store.start(job.id, again.attempt)
    store.reserve(job.id, again.attempt, key="k1", stage=None, provider="simulated",
                  model="sim-small", reservation=want)
    store.settle(job.id, again.attempt, key="k1", usage=Usage(10, 10),
                 price=ModelPrice("simulated", "sim-small", Decimal(0), Decimal(0)),
                 profile_id="p", result_json='"x"')
    assert len(_fired(app, job.id)) == 1
    assert len(app.budget_crossings("default")) == 1


def test_thresholds_are_validated_and_cleared():
    assert Budget(thresholds=[1, 0.5, 0.5]).thresholds == (0.5, 1.0)
    assert Budget.from_dict({"thresholds": [0.8], "soft": True}).to_dict() == {
        "thresholds": [0.8], "soft": True}
    assert Budget(thresholds=[0.8]).merged({"thresholds": []}).to_dict() == {}
    for bad in ([0], [-1], [11], "0.8", [True], list(range(1, 12))):
        with pytest.raises(InvalidPayload):
            Budget(thresholds=bad)
    with pytest.raises(InvalidPayload):
        Budget(soft="yes")


def test_a_pruned_jobs_crossings_go_with_it_and_its_projects_stay(app, clock):
    _steady(app)
    app.set_project_budget("kept", max_calls=4, thresholds=[0.5])
    job = app.submit("steady", {"calls": 2}, project="kept",
                     budget={"max_calls": 2, "thresholds": [1]})
    run_next(app)
    assert sorted((r.scope, r.job_id) for r in app.budget_crossings("kept")) == [
        ("job", job.id), ("project", job.id)]
    clock.advance(120)
    assert app.prune(older_than_s=60) == 1
    assert [r.scope for r in app.budget_crossings("kept")] == ["project"]


def test_a_childs_call_left_open_crosses_its_parents_threshold_once(app, clock):
    """The orphan of a child's expired lease is settled outside any call batch (where the
    child's own rows carry no ancestor's limits): its parent's threshold still fires."""
    store = app.store

    @app.job("child")
    def child(ctx, payload):
        return None

    @app.job("parent")
    def parent(ctx, payload):
        return ctx.map_jobs("child", [{}])

    job = app.submit("parent", {}, budget={"max_calls": 2, "thresholds": [0.5]})
    assert run_next(app).state == JobState.WAITING
    (claim,) = store.claim("w", queues=None, limit=1, lease_ttl=10, start=True)
    assert claim.job.parent_id == job.id
    store.reserve(claim.job.id, claim.attempt, key="k0", stage=None, provider="simulated",
                  model="sim-small", reservation=Reservation(Decimal("0.001"), 10, 10))
    clock.advance(60)
    store.expire_leases()
    (row,) = app.budget_crossings("default", job_id=job.id)
    assert (row.job_id, row.used, row.threshold) == (claim.job.id, "1", 0.5)
    assert [d["budget"] for d in _fired(app, claim.job.id)] == [str(job.id)]


def test_a_provider_batch_settled_by_the_sweep_crosses_once(app, clock, tmp_path):
    """A provider batch's items settle in the sweep's transaction, outside any call: the
    three calls its settlement adds cross 50 % of the job's max_calls there, once."""
    from tether.providers.batches import SimulatedBatches
    from tether.worker.batch_poller import BatchPoller

    sim = SimulatedBatches(tmp_path / "batches", complete_after_s=60, now=clock.time)
    app.add_batch_provider(sim)

    @app.job("gen")
    def gen(ctx, payload):
        return len(ctx.batch(key="gen", provider="simulated", model="sim-small",
                             requests={f"q{i}": {"prompt": f"q {i}", "max_tokens": 20}
                                       for i in range(3)},
                             estimate=Estimate(input_tokens=50, max_output_tokens=20)))

    job = app.submit("gen", budget={"max_calls": 4, "thresholds": [0.5, 1]})
    run_next(app)
    assert _fired(app, job.id) == [], "a reservation crosses nothing"
    clock.advance(60)
    assert BatchPoller(app.store, app, interval=1).run_once() == 1
    assert [(d["threshold"], d["used"]) for d in _fired(app, job.id)] == [(0.5, 3)]
    assert run_next(app).state == JobState.SUCCEEDED
    assert len(app.budget_crossings("default")) == 1
