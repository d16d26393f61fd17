"""The fork show test (issue 22): fork from the third of five stages with a new prompt.

A real worker process runs both jobs on each backend; the fork is made with the real
``tether job fork`` command. The simulated provider's own bill (written by the worker, outside
tether's store) is the ground truth: it must show no call of stages 1-2 made for the fork,
while the fork's ledger and ``tether job status`` show those calls as reused from the source.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

import pytest

from tether import JobState, Tether
from tether.providers.simulated import read_bill
from tests.apps.forks import app as fork_app
from tests.e2e.clitools import tether
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow


def test_fork_from_the_third_of_five_stages_with_a_new_prompt(database_url, tmp_path):
    bill = tmp_path / "bill.jsonl"
    app = Tether(database_url)
    app.registry = fork_app.registry
    worker = start_worker(database_url, app="tests.apps.forks:app", concurrency=2,
                          env={"TETHER_SIM_BILL": str(bill)}, log=tmp_path / "worker.log")
    try:
        src = app.submit("five_stages", {"topic": "tides", "prompt": "be brief"},
                         budget={"max_cost_usd": "0.5"})
        wait_until(lambda: app.get(src.id).terminal, timeout=60, what="the source job")
        assert app.get(src.id).state == JobState.SUCCEEDED
        billed_before = len(read_bill(bill))
        assert billed_before == 10

        args = ("job", "fork", str(src.id), "--from-stage", "validate", "--payload",
                json.dumps({"topic": "tides", "prompt": "be thorough"}), "-k", "fork-cli")
        made = tether(*args, "--json", db=database_url)
        assert made.code == 0, made
        fork_id = made.json()["id"]
        repeat = tether(*args, db=database_url)  # a retried command: the same fork
        assert repeat.code == 0, repeat
        assert f"job {fork_id}: already forked with key fork-cli" in " ".join(repeat.out.split())
        wait_until(lambda: app.get(fork_id).terminal, timeout=60, what="the fork")
    finally:
        stop(worker)

    fork = app.get(fork_id)
    assert fork.state == JobState.SUCCEEDED
    assert fork.result["prompt"] == "be thorough" and fork.result["before"] == "review"
    assert app.checkpoint_value(fork_id, "outline") == app.checkpoint_value(src.id, "outline")
    assert app.checkpoint_value(fork_id, "validate")["prompt"] == "be thorough"

    # The provider's own bill: stages 1-2 were billed once, to the source, never to the fork.
    entries = read_bill(bill)
    per_stage = Counter((e.job_id, e.key.split("-")[0]) for e in entries)
    assert per_stage == {
        **{(src.id, s): 2 for s in ("draft", "outline", "validate", "review", "export")},
        **{(fork_id, s): 2 for s in ("validate", "review", "export")}}
    fork_bill = sum((e.cost_usd for e in entries if e.job_id == fork_id), Decimal(0))

    # The fork's ledger: the four calls of stages 1-2 reused from the source at cost 0, with
    # the source's cost beside them; only the six new calls are counted in its budget.
    source_cost = {r.key: r.cost_usd for r in app.ledger(src.id)}
    ledger = app.ledger(fork_id)
    reused = {r.key: r for r in ledger if r.reused_from is not None}
    assert sorted(reused) == ["draft-0", "draft-1", "outline-0", "outline-1"]
    assert all(r.reused_from == src.id and r.cost_usd == 0 for r in reused.values())
    assert all(r.reused_cost_usd == source_cost[k] for k, r in reused.items())
    paid = [r for r in ledger if r.reused_from is None]
    assert sorted(r.key.split("-")[0] for r in paid) == ["export"] * 2 + ["review"] * 2 + \
        ["validate"] * 2
    assert sum(r.cost_usd for r in paid) == fork_bill == fork.budget.used.spent_usd
    assert fork.budget.used.calls == 6
    reused_cost = sum(source_cost[k] for k in reused)

    status = tether("job", "status", str(fork_id), db=database_url)
    assert status.code == 0, status
    text = " ".join(status.out.split())
    assert f"forked from job {src.id} at stage validate (reused: draft, outline)" in text
    assert "draft (" in text and f"reused from job {src.id})" in text
    assert f"4 calls reused from job {src.id}" in text and "paid there, not again" in text
    assert "6 billed calls" in text
    as_json = tether("job", "status", str(fork_id), "--json", db=database_url).json()
    assert as_json["calls"]["reused_from"] == [
        {"job_id": src.id, "calls": 4, "cost_usd": str(reused_cost)}]
    assert as_json["calls"]["billed"] == 6
    assert as_json["forked_from"]["stages"] == ["draft", "outline"]
    events = [e.kind for e in app.events(src.id)]
    assert "forked_to" in events
