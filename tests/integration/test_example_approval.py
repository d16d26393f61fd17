"""``examples/approval.py`` with a real worker process on both backends, answered from the CLI.

Approved: the job plans (one paid call), waits without a lease showing the planned cost,
``tether job signal`` wakes it, and it generates; the replay pays for nothing twice. A signal
sent before the job asks is kept and answers the question once (the first of two, in order).
No answer in time: the job handles ``SignalTimeout`` and ends ``expired`` without generating,
and a late signal is refused.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

import pytest

from tether import JobState, Tether
from tether.providers.simulated import read_bill
from tests.e2e.clitools import one_error_line, tether
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow

APP = "examples.approval:app"


@pytest.fixture
def run(database_url, tmp_path):
    client = Tether(database_url)
    bill = tmp_path / "bill.jsonl"
    workers = []

    def start():
        workers.append(start_worker(database_url, app=APP, concurrency=2,
                                    log=tmp_path / "worker.log",
                                    env={"TETHER_SIM_BILL": str(bill)}))

    yield client, bill, start
    for w in workers:
        stop(w)
    client.close()


def state_of(client, job_id, *states):
    return wait_until(lambda: client.get(job_id).state in states and client.get(job_id),
                      timeout=60, what=f"job {job_id} to reach {states}")


def billed(bill, job_id) -> Counter:
    return Counter(e.key for e in read_bill(bill) if e.job_id == job_id)


def test_approved_from_the_cli_generates_and_pays_for_nothing_twice(run, database_url):
    client, bill, start = run
    job = client.submit("approval", {"topic": "durable jobs", "sections": 3}, project="p1")
    start()
    waiting = state_of(client, job.id, JobState.WAITING)
    assert waiting.lease_owner is None and waiting.lease_expires_at is None
    planned = client.checkpoint_value(job.id, "plan")
    question = client.waiting_summary(job.id)
    assert question.signal == "approve"
    assert question.prompt.startswith(f"Approve plan for ${planned['max_cost_usd']}? 3 sections")
    assert billed(bill, job.id) == Counter({"plan": 1}), "nothing generated before approval"

    status = tether("job", "status", str(job.id), db=database_url)
    assert status.code == 0, status
    assert f"Approve plan for ${planned['max_cost_usd']}?" in status.out
    answer = tether("job", "signal", str(job.id), "approve", "--value",
                    json.dumps({"approved": True, "value": "go"}), db=database_url)
    assert answer.code == 0, answer
    assert "signal 'approve' sent; waiting → queued" in answer.out

    done = state_of(client, job.id, JobState.SUCCEEDED, JobState.FAILED)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    assert done.result["status"] == "approved" and done.result["note"] == "go"
    assert len(done.result["sections"]) == 3
    assert done.attempt_count == 2, "woken once, replayed once"
    assert billed(bill, job.id) == Counter({"plan": 1, "section-1": 1, "section-2": 1,
                                            "section-3": 1})
    generated = sum(e.cost_usd for e in read_bill(bill)
                    if e.job_id == job.id and e.key.startswith("section-"))
    assert generated <= Decimal(planned["max_cost_usd"]), "the prompt's cost was a bound"
    (w,) = client.waits(job.id)
    assert (w.kind, w.outcome, w.value) == ("signal", "received",
                                            {"approved": True, "value": "go"})


def test_a_signal_sent_before_the_wait_is_consumed_once(run, database_url):
    client, bill, start = run
    job = client.submit("approval", {"sections": 2})
    for value in ({"approved": False, "value": "first"}, {"approved": True, "value": "second"}):
        r = tether("job", "signal", str(job.id), "approve", "--value", json.dumps(value),
                   db=database_url)
        assert r.code == 0, r
        assert "queued" in r.out, "the job has not run: the signal waits in its mailbox"
    start()
    done = state_of(client, job.id, JobState.SUCCEEDED, JobState.FAILED)
    assert done.result["status"] == "rejected" and done.result["note"] == "first"
    assert done.attempt_count == 1, "the mailbox answered at once: no wait, no replay"
    kinds = [e.kind for e in client.events(job.id)]
    assert kinds.count("signal") == 2 and "waiting" not in kinds
    (w,) = client.waits(job.id)
    assert w.value == {"approved": False, "value": "first"}
    assert billed(bill, job.id) == Counter({"plan": 1})


def test_no_answer_in_time_expires_without_generating(run, database_url):
    client, bill, start = run
    job = client.submit("approval", {"sections": 2, "approval_timeout_s": 2})
    start()
    state_of(client, job.id, JobState.WAITING)
    done = state_of(client, job.id, JobState.SUCCEEDED, JobState.FAILED)
    assert done.result["status"] == "expired"
    (w,) = client.waits(job.id)
    assert (w.outcome, w.status) == ("timeout", "done")
    assert (w.done_at - w.created_at).total_seconds() >= 2
    assert billed(bill, job.id) == Counter({"plan": 1})
    late = tether("job", "signal", str(job.id), "approve", "--value", "true",
                  db=database_url)
    assert late.code == 2 and one_error_line(late, "invalid_transition")
