"""Replays that notice change, on every backend: a job journals call ``gen-1`` in stage
``draft`` and waits for a signal; the code is deployed again (a new ``Tether`` on the same
database, with another prompt, model or stage version); the replay pauses with
``journal_mismatch`` and is resumed with each decision. The simulated provider's bill, the
ledger and the invariant checker say what each decision cost (injected clock, no sleeps)."""

import pytest

from tether import JobState, JobStateError, Tether
from tether.errors import InvalidArgument
from tether.providers.simulated import read_bill
from tether.testing.invariants import describe, failed, run_checks
from tests.replaying import PROMPT_A, PROMPT_B, deploy, run_next, waiting_job  # noqa: F401


def assert_paused_on(app, job_id, differs, stage="draft", key="gen-1"):
    job = app.get(job_id)
    assert (job.state, job.error_code) == (JobState.PAUSED, "journal_mismatch")
    event = [e for e in app.events(job_id) if e.kind == "journal_mismatch"][-1]
    assert event.to_state == "paused"
    assert event.data.get("key") == key and event.data["stage"] == stage
    assert event.data["differs"] == differs
    assert (key or stage) in job.error_summary


def checks_pass(app, deploy):
    checks = run_checks(app, bill_path=deploy.bill)
    assert not failed(checks), describe(checks)


def test_an_unchanged_replay_pays_nothing_and_does_not_pause(deploy):
    job = waiting_job(deploy)
    app = deploy()
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED
    assert len(read_bill(deploy.bill)) == 1
    assert [e.kind for e in app.events(job.id) if "journal" in e.kind or "call_" in e.kind] == []
    (entry,) = app.journal(job.id)
    assert entry.fingerprint is not None and '"provider":"simulated"' in entry.fingerprint
    checks_pass(app, deploy)


def test_a_changed_prompt_pauses_then_reuse_returns_the_recorded_answer(deploy):
    job = waiting_job(deploy)
    first = deploy.sim.answer(PROMPT_A, 40, "sim-small")[0]
    app = deploy(prompt=PROMPT_B)
    run_next(app)
    (differs,) = [e.data["differs"] for e in app.events(job.id) if e.kind == "journal_mismatch"]
    assert list(differs) == ["estimate.input_sha256"]
    assert_paused_on(app, job.id, differs)
    assert len(read_bill(deploy.bill)) == 1, "nothing paid at the pause"

    assert run_next(app) is None  # a paused job is not claimed
    app.resume(job.id, on_change="reuse")
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result["text"] == first
    assert len(read_bill(deploy.bill)) == 1
    assert len(app.ledger(job.id)) == 1
    (reused,) = [e for e in app.events(job.id) if e.kind == "call_reused"]
    assert reused.data["key"] == "gen-1" and reused.data["differs"] == differs
    checks_pass(app, deploy)


def test_a_changed_prompt_resumed_with_repay_pays_once_more_in_a_row_of_its_own(deploy):
    job = waiting_job(deploy)
    old = deploy.sim.answer(PROMPT_A, 40, "sim-small")[0]
    new = deploy.sim.answer(PROMPT_B, 40, "sim-small")[0]
    app = deploy(prompt=PROMPT_B)
    run_next(app)
    assert app.get(job.id).error_code == "journal_mismatch"
    app.resume(job.id, on_change="repay")
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result["text"] == new
    assert len(read_bill(deploy.bill)) == 2
    first, second = app.ledger(job.id)
    assert (first.key, second.key) == ("gen-1", "gen-1")
    assert first.confirmed and second.confirmed and second.attempt == done.attempt_count
    assert first.attempt == 1 and first.cost_usd > 0 and second.cost_usd > 0
    (entry,) = app.journal(job.id)
    assert entry.status == "done" and entry.result["text"] == new
    (repaid,) = [e for e in app.events(job.id) if e.kind == "call_repaid"]
    assert repaid.data["key"] == "gen-1" and repaid.data["result"]["text"] == old
    assert repaid.data["cost_usd"] == str(first.cost_usd)
    spent = app.get(job.id).budget.used
    assert spent.calls == 2 and spent.spent_usd == first.cost_usd + second.cost_usd
    checks_pass(app, deploy)


@pytest.mark.parametrize("decision", ["reuse", "repay"])
def test_a_swapped_model_names_both_models(deploy, decision):
    job = waiting_job(deploy)
    app = deploy(model="sim-large")
    run_next(app)
    assert_paused_on(app, job.id, {"model": ["sim-small", "sim-large"]})
    assert "model sim-small -> sim-large" in app.get(job.id).error_summary
    app.resume(job.id, on_change=decision)
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED
    bill = read_bill(deploy.bill)
    assert [b.model for b in bill] == (["sim-small"] if decision == "reuse"
                                       else ["sim-small", "sim-large"])
    assert [r.model for r in app.ledger(job.id)] == [b.model for b in bill]
    checks_pass(app, deploy)


def test_a_changed_request_is_named_as_such(deploy):
    job = waiting_job(deploy, request=True)
    app = deploy(prompt=PROMPT_B, request=True)
    run_next(app)
    (event,) = [e for e in app.events(job.id) if e.kind == "journal_mismatch"]
    assert list(event.data["differs"]) == ["request"]


@pytest.mark.parametrize("decision", ["reuse", "repay"])
def test_a_changed_stage_version_pauses_and_each_decision_holds(deploy, decision):
    job = waiting_job(deploy, version="1")
    app = deploy(version="2")
    run_next(app)
    assert_paused_on(app, job.id, {"version": ["1", "2"]}, stage="plan", key=None)
    app.resume(job.id, on_change=decision)
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED
    assert len(read_bill(deploy.bill)) == 1, "the stage's own calls did not change: not re-paid"
    kinds = [e.kind for e in app.events(job.id)]
    assert ("stage_reused" if decision == "reuse" else "stage_rerun") in kinds
    (plan,) = [c for c in app.checkpoints(job.id) if c.stage == "plan"]
    assert plan.version == "2"
    again = deploy(version="2")  # the decision was recorded: a later replay matches
    assert app.get(job.id).terminal and again.get(job.id).state == JobState.SUCCEEDED
    checks_pass(app, deploy)


def test_an_added_stage_runs_and_pays_only_its_own_calls(deploy):
    job = waiting_job(deploy)
    app = deploy(added_stage=True)
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED, (done.error_code, done.error_summary)
    assert [b.key for b in read_bill(deploy.bill)] == ["gen-1", "gen-0"]
    assert {e.key for e in app.ledger(job.id)} == {"gen-0", "gen-1"}
    assert not [e for e in app.events(job.id) if e.kind in ("journal_mismatch", "call_repaid")]
    checks_pass(app, deploy)


def test_the_job_type_or_the_call_can_declare_its_policy(deploy):
    job = waiting_job(deploy)
    app = deploy(prompt=PROMPT_B, on_change="repay")
    assert run_next(app).state == JobState.SUCCEEDED
    assert len(read_bill(deploy.bill)) == 2

    other = waiting_job(deploy)
    app = deploy(prompt=PROMPT_B, on_change="repay", call_on_change="reuse")
    assert run_next(app).state == JobState.SUCCEEDED
    assert len(read_bill(deploy.bill)) == 3, "the call's own policy (reuse) won"
    assert [e.kind for e in app.events(other.id)].count("call_reused") == 1
    assert job.id != other.id
    checks_pass(app, deploy)


def test_a_resume_without_a_decision_pauses_again_at_the_same_change(deploy):
    job = waiting_job(deploy)
    app = deploy(prompt=PROMPT_B)
    run_next(app)
    app.resume(job.id)
    run_next(app)
    assert app.get(job.id).error_code == "journal_mismatch"
    assert [e.kind for e in app.events(job.id)].count("journal_mismatch") == 2
    assert len(read_bill(deploy.bill)) == 1


def test_a_decision_needs_a_job_paused_by_a_mismatch(deploy):
    job = waiting_job(deploy)
    app = deploy()
    with pytest.raises(JobStateError):
        app.resume(job.id, on_change="reuse")
    app.pause(job.id)
    with pytest.raises(JobStateError):
        app.resume(job.id, on_change="reuse")
    with pytest.raises(InvalidArgument):
        app.resume(job.id, on_change="pause")


def test_entries_written_before_fingerprints_are_reused_as_before(deploy, backend):
    job = waiting_job(deploy)
    app = deploy(prompt=PROMPT_B)
    with app.store._write() as tx:
        tx.conn.execute("UPDATE call_journal SET fingerprint = NULL")
    assert run_next(app).state == JobState.SUCCEEDED
    assert len(read_bill(deploy.bill)) == 1
    assert app.journal(job.id)[0].fingerprint is None



@pytest.mark.parametrize("decision", ["reuse", "repay"])
def test_a_stage_can_declare_its_own_policy_over_the_job_types(database_url, clock, decision):
    """``ctx.stage(..., on_change=)`` decides a changed version without a pause, though the
    job type's policy is ``pause``; a later stage without its own policy still pauses, and the
    first stage's decision, recorded with its new version, holds on the replay after that."""
    ran = []

    def deployed(version):
        app = Tether(database_url, clock=clock)

        @app.job("stager")
        def stager(ctx, payload):
            own = ctx.stage("own", lambda: ran.append("own") or version, version=version,
                            on_change=decision)
            kept = ctx.stage("kept", lambda: ran.append("kept") or "k", version=version)
            ctx.wait_for_signal("go")
            return [own, kept]
        return app

    first = deployed("1")
    job = first.submit("stager")
    assert run_next(first).state == JobState.WAITING and ran == ["own", "kept"]
    first.signal(job.id, "go", True)
    first.close()

    app = deployed("2")
    try:
        assert run_next(app).error_code == "journal_mismatch"
        (event,) = [e for e in app.events(job.id) if e.kind == "journal_mismatch"]
        assert event.data["stage"] == "kept", "the stage without its own policy paused"
        rerun = ["own"] if decision == "repay" else []
        assert ran == ["own", "kept", *rerun]
        app.resume(job.id, on_change="reuse")
        done = run_next(app)
        assert done.state == JobState.SUCCEEDED
        assert done.result == ["1" if decision == "reuse" else "2", "k"]
        assert ran == ["own", "kept", *rerun], "the first stage decided once"
        kinds = [e.kind for e in app.events(job.id)]
        assert kinds.count("stage_reused") == (2 if decision == "reuse" else 1)
        assert kinds.count("stage_rerun") == len(rerun)
    finally:
        app.close()
