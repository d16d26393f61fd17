"""The ``tether`` CLI end to end: every command as a subprocess on a real SQLite file.

One ``tether worker`` subprocess serves the module's ``default`` queue; jobs that must stay
queued go to the ``held`` queue, which no worker serves. Variants of a command (each error
case, each filter) are in ``test_cli_inprocess.py``; here each command runs for real.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tether import Tether
from tests.e2e.clitools import APP, one_error_line, popen, tether
from tests.procs import stop, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('cli')}/tether.db"


@pytest.fixture(scope="module")
def facade(db):
    app = Tether(db)
    yield app
    app.close()


@pytest.fixture(scope="module")
def worker(db, tmp_path_factory):
    log = open(tmp_path_factory.mktemp("cli-worker") / "worker.log", "w+")
    proc = popen("worker", "--app", APP, "--queues", "default", "--concurrency", "4",
                 "--poll-interval", "0.05", "--prefetch", "2", db=db,
                 stdout=subprocess.DEVNULL, stderr=log)
    wait_until(lambda: log.seek(0) or "started" in log.read(), timeout=30,
               what="the worker to start")
    yield proc
    assert stop(proc) == 0, "a drained worker exits 0"
    log.seek(0)
    assert "stopped after" in log.read()


def held(facade: Tether, type_: str = "echo", **options) -> int:
    return facade.submit(type_, options.pop("payload", {}), queue="held", **options).id


def test_help_reads_well(db):
    r = tether("--help", db=db)
    assert r.code == 0
    for command in ("worker", "submit", "run", "job", "queue", "serve", "mcp", "db", "prune",
                    "Examples", "Exit codes"):
        assert command in r.out


def test_a_help_page_reads_naturally(db):
    """The pinned typer prints flags and arguments plainly: ``--json``, ``JOB_ID`` (later typer
    releases print ``--json <bool>`` and ``{JOB_ID}``)."""
    r = tether("job", "status", "--help", db=db)
    assert r.code == 0, r
    lines = [line.strip() for line in r.out.splitlines()]
    assert "Usage: tether job status [OPTIONS] JOB_ID" in lines
    assert "<bool>" not in r.out and "{JOB_ID}" not in r.out and "<int>" not in r.out
    json_row = next(line for line in r.out.splitlines() if "--json" in line)
    assert json_row.split("--json", 1)[1].split()[:2] == ["Print", "JSON"]


def test_submit_and_job_list_as_table_and_json(db):
    r = tether("submit", "echo", "--queue", "held", "--project", "p-list", "-p", '{"a": 1}',
               "--max-cost", "2.5", "--max-calls", "10", "--priority", "3", db=db)
    assert r.code == 0, r
    assert "submitted: echo in p-list/held, queued" in r.out
    job_id = int(r.out.split()[1])
    second = tether("submit", "echo", "--queue", "held", "--project", "p-list", "--json",
                    "--run-after", "1h", db=db).json()
    assert second["state"] == "queued" and second["project"] == "p-list"

    table = tether("job", "list", "--project", "p-list", db=db)
    assert table.code == 0
    header, rule, *rows = table.out.splitlines()
    assert header.split() == ["ID", "TYPE", "PROJECT", "QUEUE", "STATE", "STAGE", "ATTEMPTS",
                              "SPENT", "UPDATED", "ERROR"]
    assert set(rule.strip()) == {"─"}
    assert [row.split()[:5] for row in rows] == [
        [str(second["id"]), "echo", "p-list", "held", "queued"],
        [str(job_id), "echo", "p-list", "held", "queued"]]
    assert "$0 / $2.50" in rows[1] and "0/3" in rows[1]

    listed = tether("job", "list", "--project", "p-list", "--state", "queued", "--json", db=db)
    jobs = listed.json()
    assert [j["id"] for j in jobs] == [second["id"], job_id]
    first = jobs[1]
    assert first["payload"] == {"a": 1} and first["priority"] == 3
    assert first["budget"]["limits"] == {"max_cost_usd": "2.5", "max_calls": 10}


def test_idempotent_submit_and_conflict(db):
    first = tether("submit", "echo", "--queue", "held", "-q", "-k", "doc-42", "-p", '{"v": 1}',
                   db=db)
    again = tether("submit", "echo", "--queue", "held", "-q", "-k", "doc-42", "-p", '{"v": 1}',
                   db=db)
    assert again.code == 0 and again.out == first.out and first.out.strip().isdigit()
    assert "matched existing job" in again.err
    conflict = tether("submit", "echo", "--queue", "held", "-k", "doc-42", "-p", '{"v": 2}',
                      db=db)
    assert conflict.code == 2 and conflict.out == ""
    one_error_line(conflict, "idempotency_conflict")


def test_bad_json_payload_exits_2_and_stores_nothing(db, facade):
    before = len(facade.list(limit=1000))
    bad = tether("submit", "echo", "-p", '{"text": ', db=db)
    assert bad.code == 2 and bad.out == ""
    assert "--payload is not valid JSON" in one_error_line(bad, "invalid_payload")
    assert len(facade.list(limit=1000)) == before


def test_not_found_exits_3(db):
    r = tether("job", "status", "999999", db=db)
    assert r.code == 3 and r.out == ""
    assert "job 999999 not found" in one_error_line(r, "job_not_found")


def test_control_commands_and_invalid_transition(db, facade):
    job_id = held(facade)
    refused = tether("job", "resume", str(job_id), db=db)
    assert refused.code == 2
    assert "queued" in one_error_line(refused, "invalid_transition")
    paused = tether("job", "pause", str(job_id), db=db)
    assert paused.code == 0 and f"job {job_id}: queued → paused" in paused.out
    resumed = tether("job", "resume", str(job_id), "--json", db=db)
    assert resumed.code == 0 and resumed.json()["state"] == "queued"
    cancelled = tether("job", "cancel", str(job_id), "--reason", "not needed", "--json", db=db)
    assert cancelled.json()["state"] == "cancelled"
    assert cancelled.json()["error_summary"] == "not needed"
    gone = facade.cancel(held(facade)).id
    for action in ("retry", "requeue"):
        r = tether("job", action, str(gone), db=db)
        assert r.code == 2, r
        one_error_line(r, "invalid_transition")


def test_job_budget_raises_limits(db, facade):
    job_id = held(facade, budget={"max_cost_usd": "1"})
    r = tether("job", "budget", str(job_id), "--max-cost", "5", "--max-calls", "100",
               "--max-duration", "1h", "--json", db=db)
    assert r.code == 0, r
    assert r.json()["budget"]["limits"] == {"max_cost_usd": "5", "max_calls": 100,
                                            "max_duration_s": 3600.0}


def test_worker_runs_a_job_then_status_and_events_show_it(db, worker):
    job_id = int(tether("submit", "echo", "-p", '{"n": 7}', "-q", db=db).out)
    follow = tether("job", "events", str(job_id), "--follow", db=db, timeout=60)
    assert follow.code == 0
    assert "running → succeeded" in follow.out.splitlines()[-1]

    status = tether("job", "status", str(job_id), db=db)
    assert status.code == 0
    for expected in (f"{job_id}  echo  succeeded", "attempts     1 of 3", '{"echo": {"n": 7}}',
                     "checkpoints  none yet", "OUTCOME"):
        assert expected in status.out, status
    assert [line.split() for line in status.out.splitlines()
            if line.startswith("stage")] == [["stage", "echo"]]
    data = tether("job", "status", str(job_id), "--json", db=db).json()
    assert data["state"] == "succeeded" and data["result"] == {"echo": {"n": 7}}
    assert [a["outcome"] for a in data["attempts"]] == ["succeeded"]
    assert data["checkpoints"] == [] and data["calls"]["billed"] == 0

    events = tether("job", "events", str(job_id), "--json", db=db).json()
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["kind"] == "submitted" and events[-1]["to_state"] == "succeeded"
    assert len(follow.out.splitlines()) == len(events)


def test_a_worker_process_switches_threads_every_millisecond(db, facade, worker):
    job_id = int(tether("submit", "switch_interval", "-q", db=db).out)
    wait_until(lambda: facade.get(job_id).state.value == "succeeded", timeout=30,
               what="the job to succeed")
    assert facade.get(job_id).result == {"s": 0.001}
    assert sys.getswitchinterval() == 0.005, "this process (no worker command) keeps its own"


def test_events_follow_ends_when_a_running_job_is_cancelled(db, facade, worker):
    job_id = facade.submit("steps", {"n": 400, "step_s": 0.05}).id
    follower = popen("job", "events", str(job_id), "--follow", "--json", db=db,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: facade.get(job_id).state == "running", timeout=30,
                   what="the job to run")
        time.sleep(0.5)
        assert follower.poll() is None, "--follow waits while the job runs"
        r = tether("job", "cancel", str(job_id), db=db)
        assert r.code == 0 and "cancelling" in r.out
        out, err = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    assert any(e["to_state"] == "running" for e in lines)
    assert lines[-1]["to_state"] == "cancelled"


def test_run_exit_codes_and_progress(db, worker):
    ok = tether("run", "echo", "--app", APP, "-p", '{"r": 1}', db=db, timeout=60)
    assert ok.code == 0, ok
    assert "succeeded" in ok.out and '{"echo": {"r": 1}}' in ok.out
    assert "succeeded" in ok.err and "attempt" in ok.err, "progress goes to stderr"

    failed = tether("run", "boom", "--app", APP, "-p", '{"message": "kaput"}', "--json", db=db,
                    timeout=60)
    assert failed.code == 1, failed
    assert failed.json()["state"] == "failed" and "kaput" in failed.json()["error_summary"]
    assert "tether job retry" in failed.err

    timed_out = tether("run", "echo", "--queue", "held", "--timeout", "0.3", db=db, timeout=60)
    assert timed_out.code == 1 and "stopped waiting" in timed_out.err
    assert "queued" in timed_out.out


def test_run_pauses_on_budget_and_job_budget_lets_it_finish(db, facade, tmp_path):
    env = {"TETHER_SIM_BILL": str(tmp_path / "bill.jsonl"), "TETHER_SIM_LATENCY": "0",
           "TETHER_EXAMPLE_OUTPUT_DIR": str(tmp_path)}
    payload = json.dumps({"text": "word " * 400, "chunk_chars": 200, "questions_per_chunk": 2,
                          "output": "out.jsonl"})
    paused = tether("run", "qa_pipeline", "--app", "examples.pipeline:app", "--queue", "pipe",
                    "-p", payload, "--max-cost", "0.0005", "--json", db=db, env=env, timeout=60)
    assert paused.code == 1, paused
    job = paused.json()
    assert job["state"] == "paused" and job["error_code"] == "budget_exhausted"
    assert "tether job budget" in paused.err
    status = tether("job", "status", str(job["id"]), db=db)
    assert "budget_exhausted" in status.out and "billed call" in status.out
    assert "1 stage: chunk" in status.out

    raised = tether("job", "budget", str(job["id"]), "--max-cost", "1", db=db)
    assert raised.code == 0 and "paused → queued" in raised.out
    w = popen("worker", "--app", "examples.pipeline:app", "--queues", "pipe",
              "--poll-interval", "0.05", db=db, env=env, stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: facade.get(job["id"]).terminal, timeout=60, what="the pipeline")
    finally:
        stop(w)
    final = tether("job", "status", str(job["id"]), "--json", db=db).json()
    assert final["state"] == "succeeded"
    calls = final["calls"]
    assert calls["billed"] == final["budget"]["used"]["calls"] == len(facade.ledger(job["id"]))
    assert calls["reused"] == job["budget"]["used"]["calls"] > 0, \
        "the resumed attempt answered every call paid before the pause from the journal"
    assert [c["stage"] for c in final["checkpoints"]][:2] == ["chunk", "generate"]


def test_queue_commands(db, facade):
    facade.submit("echo", {}, queue="q-ops")
    paused = tether("queue", "pause", "q-ops", db=db)
    assert paused.code == 0 and paused.out.strip() == "queue q-ops: paused"
    table = tether("queue", "list", db=db)
    assert table.out.split()[:4] == ["QUEUE", "STATUS", "QUEUED", "RUNNING"]
    row = next(line for line in table.out.splitlines() if line.startswith("q-ops"))
    assert row.split()[:3] == ["q-ops", "paused", "1"]
    queues = {q["name"]: q for q in tether("queue", "list", "--json", db=db).json()}
    assert queues["q-ops"]["paused"] is True and queues["q-ops"]["counts"]["queued"] == 1
    resumed = tether("queue", "resume", "q-ops", "--json", db=db)
    assert resumed.json()["name"] == "q-ops" and resumed.json()["paused"] is False


def test_workers_lists_the_running_worker(db, worker):
    found = tether("workers", "--json", db=db).json()
    assert any(w["queues"] == ["default"] and w["concurrency"] == 4 and w["stopped_at"] is None
               for w in found)


def test_db_migrate_and_prune(tmp_path):
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    first = tether("db", "migrate", "--json", db=fresh).json()
    assert first["applied"] and first["applied"] == sorted(first["applied"])
    again = tether("db", "migrate", db=fresh)
    assert again.code == 0 and "up to date" in again.out

    app = Tether(fresh)
    done = app.submit("echo", {})
    app.cancel(done.id)
    app.submit("echo", {})
    app.close()
    kept = tether("prune", "--older-than", "30d", "--json", db=fresh).json()
    assert kept == {"pruned": 0, "older_than_s": 30 * 86400}
    time.sleep(0.05)
    pruned = tether("prune", "--older-than", "0s", db=fresh)
    assert pruned.code == 0 and "pruned 1 job " in pruned.out
    left = tether("job", "list", "--json", db=fresh).json()
    assert [j["state"] for j in left] == ["queued"]
