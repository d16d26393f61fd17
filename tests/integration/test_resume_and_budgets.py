"""Resume without repaying, hard budgets under concurrency, crash between blob and manifest.

Real worker processes on a real SQLite file, killed with real signals; the simulated
provider's own bill is the ground truth for what was paid."""

from __future__ import annotations

import os
import random
import signal
from collections import Counter
from decimal import Decimal

import pytest

from tether import JobState, Tether
from tether.providers.simulated import bill_total, read_bill
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow


def client_for(url, module):
    import importlib
    a = Tether(url)
    a.registry = importlib.import_module(module).app.registry
    return a


def test_killed_pipeline_resumes_without_repaying_and_matches_an_uninterrupted_run(tmp_path):
    from examples.pipeline import sample_text
    env = {"TETHER_SIM_LATENCY": "0.01", "TETHER_EXAMPLE_OUTPUT_DIR": str(tmp_path)}
    payload = {"text": sample_text(), "questions_per_chunk": 4, "concurrency": 4}

    ref_url = f"sqlite:///{tmp_path}/ref.db"
    ref = client_for(ref_url, "examples.pipeline")
    ref_job = ref.submit("qa_pipeline", dict(payload, output="ref.jsonl"))
    w = start_worker(ref_url, app="examples.pipeline:app", concurrency=1,
                     env=dict(env, TETHER_SIM_BILL=str(tmp_path / "ref-bill.jsonl")))
    try:
        wait_until(lambda: ref.get(ref_job.id).terminal, timeout=120, what="reference run")
    finally:
        stop(w)
    reference = ref.get(ref_job.id)
    assert reference.state == JobState.SUCCEEDED and reference.result["generated"] >= 200

    url = f"sqlite:///{tmp_path}/chaos.db"
    bill = tmp_path / "bill.jsonl"
    app = client_for(url, "examples.pipeline")
    job = app.submit("qa_pipeline", dict(payload, output="out.jsonl"))
    rng = random.Random(11)
    kills = 0
    for _ in range(4):
        w = start_worker(url, app="examples.pipeline:app", concurrency=1, lease_ttl=1.0,
                         env=dict(env, TETHER_SIM_BILL=str(bill)), log=tmp_path / "w.log")
        target = len(read_bill(bill)) + rng.randint(5, 40)
        wait_until(lambda: len(read_bill(bill)) >= target or app.get(job.id).terminal,
                   timeout=60, interval=0.005, what="worker to make progress")
        if app.get(job.id).terminal:
            stop(w)
            break
        os.kill(w.pid, signal.SIGKILL)
        w.wait(5)
        kills += 1
    w = start_worker(url, app="examples.pipeline:app", concurrency=1, lease_ttl=1.0,
                     env=dict(env, TETHER_SIM_BILL=str(bill)))
    try:
        wait_until(lambda: app.get(job.id).terminal, timeout=120, what="resumed run to finish")
    finally:
        stop(w)
    final = app.get(job.id)
    assert kills >= 3
    assert final.state == JobState.SUCCEEDED
    assert final.result == reference.result
    assert (tmp_path / "out.jsonl").read_text() == (tmp_path / "ref.jsonl").read_text()

    entries = [e for e in read_bill(bill) if e.job_id == job.id]
    per_key = Counter(e.key for e in entries)
    unconfirmed = {r.key for r in app.ledger(job.id) if not r.confirmed}
    repeated = {k for k, n in per_key.items() if n > 1}
    assert repeated <= unconfirmed, f"paid twice without an unconfirmed ledger row: {repeated}"
    assert len(per_key) == final.result["generated"]
    assert sum(r.cost_usd for r in app.ledger(job.id)) >= bill_total(bill, job_id=job.id)
    assert final.budget.used.spent_usd >= bill_total(bill, job_id=job.id)
    assert final.attempt_count >= kills + 1


def test_concurrent_calls_and_two_jobs_never_cross_job_or_project_budgets(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    bill = tmp_path / "bill.jsonl"
    app = client_for(url, "tests.apps.money")
    # each call reserves about $0.000136 and costs about $0.000105
    app.set_project_budget("shared", max_cost_usd="0.005")
    a = app.submit("burner", {"calls": 40}, project="shared", budget={"max_cost_usd": "0.0030"})
    b = app.submit("burner", {"calls": 40}, project="shared", budget={"max_cost_usd": "0.0040"})
    env = {"TETHER_SIM_BILL": str(bill)}
    workers = [start_worker(url, app="tests.apps.money:app", concurrency=2, env=env)
               for _ in range(2)]
    try:
        wait_until(lambda: all(app.get(j.id).state == JobState.PAUSED for j in (a, b)),
                   timeout=60, what="both jobs to pause on their budgets")
        for j, limit in ((a, Decimal("0.0030")), (b, Decimal("0.0040"))):
            got = app.get(j.id)
            assert got.error_code == "budget_exhausted"
            assert bill_total(bill, job_id=j.id) <= limit
        assert bill_total(bill) <= Decimal("0.005")
        assert sum(len(app.ledger(j.id)) for j in (a, b)) == len(read_bill(bill))

        app.set_project_budget("shared", max_cost_usd="1")
        for j in (a, b):
            app.set_budget(j.id, max_cost_usd="1")
        wait_until(lambda: all(app.get(j.id).state == JobState.SUCCEEDED for j in (a, b)),
                   timeout=60, what="both jobs to finish after the limits were raised")
    finally:
        for w in workers:
            stop(w)
    for j in (a, b):
        keys = Counter(e.key for e in read_bill(bill) if e.job_id == j.id)
        assert len(keys) == 40 and set(keys.values()) == {1}, "no call was paid twice"
        assert app.get(j.id).budget.used.spent_usd == bill_total(bill, job_id=j.id)


def test_crash_between_blob_write_and_manifest_commit_leaves_the_stage_resumable(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    app = client_for(url, "tests.apps.money")
    marks = tmp_path / "marks"
    job = app.submit("two_stages", {"marks": str(marks)})
    w = start_worker(url, app="tests.apps.money:app", concurrency=1, lease_ttl=1.0)
    w.wait(30)
    assert w.returncode == -signal.SIGKILL
    assert [c.stage for c in app.checkpoints(job.id)] == ["one"], "no half-committed stage"
    w = start_worker(url, app="tests.apps.money:app", concurrency=1, lease_ttl=1.0)
    try:
        wait_until(lambda: app.get(job.id).terminal, timeout=30, what="resume")
    finally:
        stop(w)
    assert app.get(job.id).result == {"two": 2}
    assert marks.read_text().split() == ["one", "two", "two"]
    assert [c.stage for c in app.checkpoints(job.id)] == ["one", "two"]


def test_parent_killed_after_enqueuing_a_child_is_resumed_with_exactly_one_child(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    app = client_for(url, "tests.apps.money")
    flag = tmp_path / "died"
    parent = app.submit("parent_dies_once", {"flag": str(flag)})
    w = start_worker(url, app="tests.apps.money:app", concurrency=2, lease_ttl=1.0)
    w.wait(30)
    assert w.returncode == -signal.SIGKILL and flag.exists()
    w = start_worker(url, app="tests.apps.money:app", concurrency=2, lease_ttl=1.0)
    try:
        wait_until(lambda: app.get(parent.id).terminal, timeout=30, what="parent to finish")
        children = [j for j in app.list(limit=100) if j.parent_id == parent.id]
        wait_until(lambda: all(app.get(c.id).terminal for c in children), timeout=30,
                   what="child to finish")
    finally:
        stop(w)
    assert len(children) == 1
    assert app.get(parent.id).result == {"child": children[0].id} == {"child": int(flag.read_text())}
    assert app.get(children[0].id).result == {"parent": parent.id}
