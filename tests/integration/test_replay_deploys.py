"""A deploy while a job waits, with real worker processes on both backends: the old worker
journals ``gen-1`` and parks the job on a signal; a new worker process runs changed code
(another prompt, model or stage version, from its environment: ``tests/apps/replays.py``). The
replay pauses with ``journal_mismatch``; resumed, it finishes as the decision says, and the
simulated provider's own bill, the ledger and the invariant checker agree."""

from __future__ import annotations

import pytest

from tether import JobState, Tether
from tether.providers.simulated import read_bill
from tether.testing.invariants import describe, failed, run_checks
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow
APP = "tests.apps.replays:app"


def run_worker(url, bill, env, until, log):
    w = start_worker(url, app=APP, concurrency=1, env={"TETHER_SIM_BILL": str(bill), **env},
                     log=log)
    try:
        return wait_until(until, timeout=60, what="the job to settle")
    finally:
        stop(w)


@pytest.mark.parametrize("change, decision, paid", [
    ({"TETHER_TEST_PROMPT": "Write a limerick about tides."}, "repay", 2),
    ({"TETHER_TEST_MODEL": "sim-large"}, "reuse", 1),
    ({"TETHER_TEST_PLAN_VERSION": "2"}, "repay", 1),
])
def test_a_deploy_while_a_job_waits(database_url, tmp_path, change, decision, paid):
    bill, log = tmp_path / "bill.jsonl", tmp_path / "worker.log"
    app = Tether(database_url)
    try:
        job = app.submit("writer")
        run_worker(database_url, bill, {}, lambda: app.get(job.id).state == JobState.WAITING,
                   log)
        assert len(read_bill(bill)) == 1
        app.signal(job.id, "go", True)

        paused = run_worker(database_url, bill, change,
                            lambda: (j := app.get(job.id)).state == JobState.PAUSED and j, log)
        assert paused.error_code == "journal_mismatch", paused
        (event,) = [e for e in app.events(job.id) if e.kind == "journal_mismatch"]
        assert event.data.get("key", "plan") in ("gen-1", "plan")
        assert len(read_bill(bill)) == 1, "nothing paid at the pause"

        app.resume(job.id, on_change=decision)
        done = run_worker(database_url, bill, change, lambda: app.get(job.id).terminal, log)
        assert done and app.get(job.id).state == JobState.SUCCEEDED
        assert len(read_bill(bill)) == paid
        assert len(app.ledger(job.id)) == paid
        checks = run_checks(app, bill_path=bill)
        assert not failed(checks), describe(checks)
    finally:
        app.close()
