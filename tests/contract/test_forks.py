"""Fork from a stage and retry from a stage, through the real executor on every backend.

Calls go through ``ctx.call`` to a function that records each time it is really made, so
"not made again" is observed, not inferred from tether's own journal."""

from decimal import Decimal

import pytest

from tether import Estimate, IdempotencyConflict, JobNotFound, JobState, JobStateError
from tether import Metered
from tether import PolicyBlock, Usage
from tether.api.metrics import registry_for
from tether.errors import InvalidArgument
from tests.contract.test_context import claim_and_run

STAGES = ("draft", "outline", "validate", "review", "export")


def five_stages(app, made, fail=None):
    """A declared five-stage pipeline; each stage makes two calls; validate and later read
    the payload's prompt; review fails (policy block) while the payload says so, and any
    stage after its calls while ``fail`` names it."""
    def stage_fn(name):
        def run(ctx, value):
            prompt = ctx.payload["topic"] if name in ("draft", "outline") else ctx.payload["prompt"]
            if name == "review" and ctx.payload.get("fail_review"):
                raise PolicyBlock("review refused")
            outs = []
            for i in range(2):
                key = f"{name}-{i}"

                def fn(key=key, prompt=prompt):
                    made.append((ctx.id, key))
                    return Metered({"text": f"{key}:{prompt}"}, Usage(100, 20))
                outs.append(ctx.call(key=key, provider="simulated", model="sim-small",
                                     estimate=Estimate(input_tokens=100, max_output_tokens=20),
                                     fn=fn)["text"])
            if fail and fail.get(name):
                raise PolicyBlock(f"{name} refused")
            return {"stage": name, "outs": outs, "before": value}
        run.__name__ = name
        return run
    app.pipeline("five", [stage_fn(s) for s in STAGES])


def test_fork_from_the_third_stage_reuses_the_first_two(app):
    made = []
    five_stages(app, made)
    src = app.submit("five", {"topic": "cats", "prompt": "old"}, budget={"max_cost_usd": "1"})
    assert claim_and_run(app).state == JobState.SUCCEEDED
    assert len(made) == 10

    fork = app.fork(src.id, from_stage="validate", payload={"topic": "cats", "prompt": "new"})
    assert fork.id != src.id and fork.state == JobState.QUEUED
    assert fork.budget.limits.max_cost_usd == Decimal("1")
    assert fork.budget.used.spent_usd == 0 and fork.budget.used.calls == 0
    carried = app.checkpoints(fork.id)
    assert [(c.stage, c.reused_from) for c in carried] == [("draft", src.id),
                                                           ("outline", src.id)]
    source_cps = {c.stage: c.blob for c in app.checkpoints(src.id)}
    assert all(c.blob == source_cps[c.stage] for c in carried)

    done = claim_and_run(app)
    assert done.state == JobState.SUCCEEDED
    assert [k for j, k in made if j == fork.id] == [
        "validate-0", "validate-1", "review-0", "review-1", "export-0", "export-1"]
    assert done.result["outs"] == ["export-0:new", "export-1:new"]
    assert done.result["before"]["before"]["before"]["outs"] == ["outline-0:cats",
                                                                 "outline-1:cats"]

    src_ledger = {r.key: r for r in app.ledger(src.id)}
    ledger = app.ledger(fork.id)
    reused = [r for r in ledger if r.reused_from is not None]
    assert sorted(r.key for r in reused) == ["draft-0", "draft-1", "outline-0", "outline-1"]
    assert all(r.cost_usd == 0 and r.reused_from == src.id for r in reused)
    assert all(r.reused_cost_usd == src_ledger[r.key].cost_usd > 0 for r in reused)
    paid = [r for r in ledger if r.reused_from is None]
    assert len(paid) == 6
    assert done.budget.used.spent_usd == sum(r.cost_usd for r in paid)
    assert done.budget.used.calls == 6
    journal = {e.key: e for e in app.journal(fork.id)}
    assert journal["draft-0"].reused_from == src.id and journal["draft-0"].status == "done"
    assert journal["validate-0"].reused_from is None

    kinds = {e.kind: e.data for e in app.events(src.id)}
    assert kinds["forked_to"] == {"job_id": fork.id, "from_stage": "validate"}
    data = {e.kind: e.data for e in app.events(fork.id)}["forked_from"]
    assert data["job_id"] == src.id and data["from_stage"] == "validate"
    assert data["stages"] == ["draft", "outline"] and data["calls"] == 4
    assert Decimal(data["reused_cost_usd"]) == sum(r.reused_cost_usd for r in reused)
    totals = app.spend_totals()
    assert sum(t["calls"] for t in totals) == 16  # 10 + 6: reused rows are not calls


def test_the_spend_report_counts_carried_calls_once_as_budgets_and_metrics_do(app):
    five_stages(app, [])
    src = app.submit("five", {"topic": "cats", "prompt": "old"}, project="fk")
    assert claim_and_run(app).state == JobState.SUCCEEDED
    fork = app.fork(src.id, from_stage="validate", payload={"topic": "cats", "prompt": "new"})
    assert claim_and_run(app).state == JobState.SUCCEEDED
    assert sum(1 for r in app.ledger(fork.id) if r.reused_from is not None) == 4

    used = app.project_budget("fk").used
    report = app.spend(("project",))
    assert (report.total.calls, report.total.input_tokens, report.total.output_tokens,
            report.total.cost_usd) == (used.calls, used.input_tokens, used.output_tokens,
                                       used.spent_usd) == (16, 1600, 320, used.spent_usd)
    (totals,) = app.spend_totals()
    assert (totals["calls"], totals["input_tokens"], totals["output_tokens"]) == (16, 1600, 320)
    metrics = {s.name: s.value for family in registry_for(app).collect()
               for s in family.samples if s.name.startswith("tether_provider_")}
    assert metrics["tether_provider_calls_total"] == report.total.calls
    stages = {r.stage: r.calls for r in app.spend(("stage",)).rows}
    assert stages == {"draft": 2, "outline": 2, "validate": 4, "review": 4, "export": 4}


def test_a_fork_of_a_fork_names_the_job_that_paid(app):
    made = []
    five_stages(app, made)
    src = app.submit("five", {"topic": "t", "prompt": "p"})
    claim_and_run(app)
    first = app.fork(src.id, from_stage="review")
    claim_and_run(app)
    second = app.fork(first.id, from_stage="export", payload={"topic": "t", "prompt": "q"})
    assert claim_and_run(app).state == JobState.SUCCEEDED
    assert [k for j, k in made if j == second.id] == ["export-0", "export-1"]
    by_key = {r.key: r for r in app.ledger(second.id) if r.reused_from is not None}
    assert by_key["draft-0"].reused_from == src.id
    assert by_key["review-0"].reused_from == first.id
    src_cost = {r.key: r.cost_usd for r in app.ledger(src.id)}
    assert by_key["draft-0"].reused_cost_usd == src_cost["draft-0"]


def test_fork_refuses_unknown_and_unreached_stages_and_other_projects(app):
    made = []
    five_stages(app, made)
    src = app.submit("five", {"topic": "t", "prompt": "p", "fail_review": True},
                     project="p1")
    failed = claim_and_run(app)
    assert failed.state == JobState.FAILED and failed.stage == "review"
    with pytest.raises(InvalidArgument, match="no stage 'nope'"):
        app.fork(src.id, from_stage="nope")
    with pytest.raises(InvalidArgument, match="never finished stage 'review'"):
        app.fork(src.id, from_stage="export")
    with pytest.raises(InvalidArgument, match="project"):
        app.fork(src.id, from_stage="validate", project="p2")
    with pytest.raises(JobNotFound):
        app.fork(src.id, from_stage="validate", projects=["p2"])
    assert app.list(limit=10) == [app.get(src.id)]  # nothing was created
    assert [e.kind for e in app.events(src.id)][-1] == "failed"
    # The stage it failed in is a valid start: everything before it is carried.
    fork = app.fork(src.id, from_stage="review", payload={"topic": "t", "prompt": "p"},
                    budget={"max_calls": 10}, projects=["p1"])
    assert fork.project == "p1" and fork.budget.limits.max_calls == 10
    assert claim_and_run(app).state == JobState.SUCCEEDED
    assert [k for j, k in made if j == fork.id] == ["review-0", "review-1", "export-0",
                                                    "export-1"]


def test_a_fork_with_an_idempotency_key_is_made_once(app):
    """A retried fork request (same key, source, stage, configuration) returns the fork it
    made and carries nothing again; the key used for anything else is a conflict."""
    made = []
    five_stages(app, made)
    src = app.submit("five", {"topic": "cats", "prompt": "old"})
    assert claim_and_run(app).state == JobState.SUCCEEDED
    payload = {"topic": "cats", "prompt": "new"}

    fork, created = app.fork_with_status(src.id, from_stage="validate", payload=payload,
                                         idempotency_key="fork-1")
    assert created and fork.idempotency_key == "fork-1"
    again, created = app.fork_with_status(src.id, from_stage="validate", payload=payload,
                                          idempotency_key="fork-1")
    assert (again.id, created) == (fork.id, False)
    assert app.fork(src.id, from_stage="validate", payload=payload,
                    idempotency_key="fork-1").id == fork.id
    assert len(app.checkpoints(fork.id)) == 2
    assert len([r for r in app.ledger(fork.id) if r.reused_from is not None]) == 4
    assert [e.data["job_id"] for e in app.events(src.id) if e.kind == "forked_to"] == [fork.id]
    assert len(app.list(type="five")) == 2

    for other in ({"from_stage": "review", "payload": payload},
                  {"from_stage": "validate", "payload": {"topic": "cats", "prompt": "newer"}}):
        with pytest.raises(IdempotencyConflict):
            app.fork(src.id, idempotency_key="fork-1", **other)
    with pytest.raises(IdempotencyConflict):  # a plain submit under the fork's key
        app.submit("five", payload, idempotency_key="fork-1")
    second = app.fork(src.id, from_stage="validate", payload=payload, idempotency_key="fork-2")
    assert second.id not in (src.id, fork.id)
    assert len(app.list(type="five")) == 3


def test_retry_from_a_stage_drops_that_stage_on_and_pays_its_calls_again(app):
    made, fail = [], {"export": True}
    five_stages(app, made, fail)
    job = app.submit("five", {"topic": "t", "prompt": "p"})
    with pytest.raises(JobStateError):
        app.retry(job.id, from_stage="validate")  # only a failed job is retried
    assert claim_and_run(app).state == JobState.FAILED
    fail.clear()
    spent = app.get(job.id).budget.used.spent_usd
    with pytest.raises(InvalidArgument):
        app.retry(job.id, from_stage="nope")
    again = app.retry(job.id, from_stage="review")
    assert again.state == JobState.QUEUED and again.error_code is None
    assert [c.stage for c in app.checkpoints(job.id)] == ["draft", "outline", "validate"]
    assert not [e for e in app.journal(job.id) if e.stage in ("review", "export")]
    event = app.events(job.id)[-1]
    assert event.kind == "retry" and event.data["from_stage"] == "review"
    assert event.data["dropped_stages"] == ["review"]  # export failed: never checkpointed
    assert event.data["dropped_calls"] == 4
    made.clear()
    final = claim_and_run(app)
    assert final.state == JobState.SUCCEEDED
    assert [k for _, k in made] == ["review-0", "review-1", "export-0", "export-1"]
    assert final.budget.used.spent_usd > spent  # paid again, by choice
    assert len(app.ledger(job.id)) == 14


def test_plain_retry_is_unchanged(app):
    @app.job("once")
    def once(ctx, payload):
        ctx.stage("a", lambda: 1)
        raise PolicyBlock("no")
    job = app.submit("once", {})
    assert claim_and_run(app).state == JobState.FAILED
    again = app.retry(job.id)
    assert again.state == JobState.QUEUED
    assert [c.stage for c in app.checkpoints(job.id)] == ["a"]
    assert app.events(job.id)[-1].data == {"action": "retry"}


def test_a_fork_outlives_its_pruned_source(app, clock):
    """The carried blobs are the source's own (content-addressed, not copied): pruning the
    source must keep every blob a fork's checkpoint names."""
    made = []
    five_stages(app, made)
    src = app.submit("five", {"topic": "t", "prompt": "p"})
    claim_and_run(app)
    fork = app.fork(src.id, from_stage="review")
    clock.advance(3600)
    assert app.store.prune(older_than_s=60) == 1
    with pytest.raises(JobNotFound):
        app.get(src.id)
    done = claim_and_run(app)
    assert done.id == fork.id and done.state == JobState.SUCCEEDED
    assert [k for j, k in made if j == fork.id] == ["review-0", "review-1", "export-0",
                                                    "export-1"]
    assert app.checkpoint_value(fork.id, "validate")["outs"] == ["validate-0:p", "validate-1:p"]
    assert {r.reused_from for r in app.ledger(fork.id)} == {src.id, None}


def planned(app, made):
    """A call ``plan`` (asking about the payload's topic) before the first stage, then stages
    draft and review, one call each (review asks about the payload's prompt)."""
    def call(ctx, key, text):
        def fn():
            made.append((ctx.id, key))
            return Metered({"text": f"{key}:{text}"}, Usage(100, 20))
        return ctx.call(key=key, provider="simulated", model="sim-small",
                        estimate=Estimate(input_text=text, max_output_tokens=20), fn=fn)

    @app.job("planned")
    def run(ctx, payload):
        plan = call(ctx, "plan", payload["topic"])["text"]
        ctx.stage("draft", lambda: call(ctx, "draft-0", plan)["text"])
        return ctx.stage("review", lambda: call(ctx, "review-0", payload["prompt"])["text"])


def test_every_fork_carries_the_calls_made_before_the_first_stage(app):
    made = []
    planned(app, made)
    src = app.submit("planned", {"topic": "cats", "prompt": "old"}, project="pl")
    assert claim_and_run(app).state == JobState.SUCCEEDED
    assert [k for _, k in made] == ["plan", "draft-0", "review-0"]
    paid = {r.key: r.cost_usd for r in app.ledger(src.id)}

    for from_stage, runs in (("draft", ["draft-0", "review-0"]), ("review", ["review-0"])):
        fork = app.fork(src.id, from_stage=from_stage,
                        payload={"topic": "cats", "prompt": "new"})
        done = claim_and_run(app)
        assert (done.id, done.state) == (fork.id, JobState.SUCCEEDED)
        assert [k for j, k in made if j == fork.id] == runs  # plan is not made again
        assert done.result == "review-0:new"
        reused = {r.key: r for r in app.ledger(fork.id) if r.reused_from is not None}
        assert sorted(reused) == sorted({"plan", "draft-0"} - set(runs))
        assert reused["plan"].cost_usd == 0 and reused["plan"].stage is None
        assert (reused["plan"].reused_from, reused["plan"].reused_cost_usd) == (src.id,
                                                                                paid["plan"])
        assert {e.key: e.reused_from for e in app.journal(fork.id)}["plan"] == src.id
        assert done.budget.used.calls == len(runs)
        data = {e.kind: e.data for e in app.events(fork.id)}["forked_from"]
        assert data["calls"] == len(reused)
        assert Decimal(data["reused_cost_usd"]) == sum(r.reused_cost_usd for r in reused.values())

    used = app.project_budget("pl").used
    report = app.spend(("project",))
    assert report.total.calls == used.calls == 3 + 2 + 1
    assert report.total.cost_usd == used.spent_usd


def test_a_carried_call_the_fork_asks_otherwise_is_a_change_like_any_other(app):
    """A fork whose payload changes what the call before the first stage asks replays into a
    changed call: it pauses with ``journal_mismatch``, paying nothing, and is resumed with a
    decision (here: pay again)."""
    made = []
    planned(app, made)
    src = app.submit("planned", {"topic": "cats", "prompt": "p"})
    claim_and_run(app)
    fork = app.fork(src.id, from_stage="review", payload={"topic": "dogs", "prompt": "p"})
    paused = claim_and_run(app)
    assert (paused.state, paused.error_code) == (JobState.PAUSED, "journal_mismatch")
    assert [k for j, k in made if j == fork.id] == []
    app.resume(fork.id, on_change="repay")
    assert claim_and_run(app).state == JobState.SUCCEEDED
    assert [k for j, k in made if j == fork.id] == ["plan", "review-0"]
    assert [e.data["key"] for e in app.events(fork.id) if e.kind == "call_repaid"] == ["plan"]
    rows = [(r.key, r.reused_from) for r in app.ledger(fork.id)]
    assert sorted(rows, key=str) == sorted([("plan", src.id), ("draft-0", src.id),
                                            ("plan", None), ("review-0", None)], key=str)
