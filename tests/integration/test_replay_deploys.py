"""A deploy while a job waits, with real worker processes on both backends: the old worker
journals ``gen-1`` and parks the job on a signal; a new worker process runs changed code
(another prompt, model or stage version, an added stage, or a policy in code, from its
environment: ``tests/apps/replays.py``). A changed call or stage pauses the replay with
``journal_mismatch`` and nothing is paid; resumed with either decision, it finishes as
docs/guarantees.md says: reuse returns the recorded answer and pays nothing, repay pays the
changed call once more in a ledger row of its own (the old row stays), a changed stage runs
again without re-paying its unchanged calls. An added stage is no change: it runs and pays
only its own call. The simulated provider's own bill, the ledger, the events and the
invariant checker agree in every case."""

from __future__ import annotations

import pytest

from tether import JobState, Tether
from tether.providers.simulated import SimulatedProvider, read_bill
from tether.testing.invariants import describe, failed, run_checks
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow
APP = "tests.apps.replays:app"
PROMPT_A, PROMPT_B = "Write a haiku about tides.", "Write a limerick about tides."
PROMPT = {"TETHER_TEST_PROMPT": PROMPT_B}
MODEL = {"TETHER_TEST_MODEL": "sim-large"}
PLAN_VERSION = {"TETHER_TEST_PLAN_VERSION": "2"}


def run_worker(url, bill, env, until, log):
    w = start_worker(url, app=APP, concurrency=1, env={"TETHER_SIM_BILL": str(bill), **env},
                     log=log)
    try:
        return wait_until(until, timeout=60, what="the job to settle", watch=w, log=log)
    finally:
        stop(w)


def waiting_job(app, url, bill, log):
    """A ``writer`` job the old code ran up to its wait, its signal sent before the deploy."""
    job = app.submit("writer")
    run_worker(url, bill, {}, lambda: app.get(job.id).state == JobState.WAITING, log)
    assert [b.key for b in read_bill(bill)] == ["gen-1"]
    app.signal(job.id, "go", True)
    return job


def settled_as_promised(app, job, bill):
    done = app.get(job.id)
    assert done.state == JobState.SUCCEEDED, (done.error_code, done.error_summary)
    rows = app.ledger(job.id)
    assert [(r.key, r.model) for r in rows] == [(b.key, b.model) for b in read_bill(bill)]
    assert all(r.confirmed for r in rows)
    checks = run_checks(app, bill_path=bill)
    assert not failed(checks), describe(checks)
    return done, rows


@pytest.mark.parametrize("decision", ["reuse", "repay"])
@pytest.mark.parametrize("change, differs, call", [
    (PROMPT, "estimate.input_sha256", True),
    (MODEL, "model", True),
    (PLAN_VERSION, "version", False),
], ids=["prompt", "model", "stage-version"])
def test_a_deploy_while_a_job_waits(database_url, tmp_path, change, differs, call, decision):
    bill, log = tmp_path / "bill.jsonl", tmp_path / "worker.log"
    app = Tether(database_url)
    try:
        job = waiting_job(app, database_url, bill, log)
        paused = run_worker(database_url, bill, change,
                            lambda: (j := app.get(job.id)).state == JobState.PAUSED and j, log)
        assert paused.error_code == "journal_mismatch", paused
        (event,) = [e for e in app.events(job.id) if e.kind == "journal_mismatch"]
        assert differs in event.data["differs"], event.data
        assert (event.data.get("key"), event.data["stage"]) == (
            ("gen-1", "draft") if call else (None, "plan"))
        assert len(read_bill(bill)) == 1, "nothing paid at the pause"

        app.resume(job.id, on_change=decision)
        run_worker(database_url, bill, change, lambda: app.get(job.id).terminal, log)
        done, rows = settled_as_promised(app, job, bill)
        kinds = [e.kind for e in app.events(job.id)]
        model = change.get("TETHER_TEST_MODEL", "sim-small")
        prompt = change.get("TETHER_TEST_PROMPT", PROMPT_A)
        sim = SimulatedProvider(tmp_path / "unused.jsonl", seed=1)
        if call and decision == "repay":
            assert [r.key for r in rows] == ["gen-1", "gen-1"], "a row of its own, not overwritten"
            assert (rows[0].attempt, rows[0].model) == (1, "sim-small")
            assert rows[1].attempt == done.attempt_count and rows[1].model == model
            assert done.result["text"] == sim.answer(prompt, 40, model)[0]
            (repaid,) = [e for e in app.events(job.id) if e.kind == "call_repaid"]
            assert repaid.data["result"]["text"] == sim.answer(PROMPT_A, 40, "sim-small")[0]
            assert done.budget.used.calls == 2
        else:
            assert [r.key for r in rows] == ["gen-1"], "nothing paid again"
            assert done.result["text"] == sim.answer(PROMPT_A, 40, "sim-small")[0]
            assert "call_repaid" not in kinds
        expected = {("reuse", True): "call_reused", ("repay", True): "call_repaid",
                    ("reuse", False): "stage_reused", ("repay", False): "stage_rerun"}
        assert expected[decision, call] in kinds
    finally:
        app.close()


def test_a_deploy_that_adds_a_stage_runs_it_and_pays_only_its_call(database_url, tmp_path):
    bill, log = tmp_path / "bill.jsonl", tmp_path / "worker.log"
    app = Tether(database_url)
    try:
        job = waiting_job(app, database_url, bill, log)
        run_worker(database_url, bill, {"TETHER_TEST_ADDED_STAGE": "1"},
                   lambda: app.get(job.id).terminal, log)
        _, rows = settled_as_promised(app, job, bill)
        assert [r.key for r in rows] == ["gen-1", "gen-0"]
        kinds = {e.kind for e in app.events(job.id)}
        assert not kinds & {"journal_mismatch", "call_repaid", "call_reused", "stage_rerun"}
    finally:
        app.close()


def test_a_policy_in_the_deployed_code_decides_without_a_pause(database_url, tmp_path):
    bill, log = tmp_path / "bill.jsonl", tmp_path / "worker.log"
    app = Tether(database_url)
    try:
        job = waiting_job(app, database_url, bill, log)
        run_worker(database_url, bill, {**MODEL, "TETHER_TEST_ON_CHANGE": "repay"},
                   lambda: app.get(job.id).terminal, log)
        _, rows = settled_as_promised(app, job, bill)
        assert [(r.key, r.model) for r in rows] == [("gen-1", "sim-small"), ("gen-1", "sim-large")]
        kinds = [e.kind for e in app.events(job.id)]
        assert "journal_mismatch" not in kinds and kinds.count("call_repaid") == 1
    finally:
        app.close()
