"""``tether job signal`` and what ``tether job status`` / ``job list --waiting-for`` show of a
waiting job, on both backends: a signal's question (name, prompt, schema, deadline), a
timer's wake time, a gather's children n/m done. Jobs are driven to their waits in this
process (``run_next``); the CLI reads and answers them through its real entry point, and one
answer goes through the console script in a subprocess."""

from __future__ import annotations

import re
import time

import pytest

from tether import JobState
from tests.contract.test_waits import run_next
from tests.e2e.clitools import one_error_line, run_main, tether


def flat(text: str) -> str:
    """Output with runs of spaces collapsed (column widths follow the longest label)."""
    return re.sub(r" +", " ", text)


@pytest.fixture
def asking(app, clock):
    clock.advance(time.time() + 60 - clock.time())  # ahead of the CLI's own (real) clock
    @app.job("ask")
    def ask(ctx, payload):
        return ctx.wait_for_signal("approve", timeout=600, prompt="Approve plan for $42?",
                                   schema={"type": "boolean"})
    return app


def test_status_shows_the_question_and_signal_answers_it(capsys, asking, database_url):
    app = asking
    job = app.submit("ask")
    run_next(app)
    r = run_main(capsys, "job", "status", str(job.id), db=database_url)
    assert r.code == 0, r
    assert "waits for signal approve" in flat(r.out)
    assert "question Approve plan for $42?" in flat(r.out)
    assert 'schema {"type": "boolean"}' in flat(r.out)
    assert "(then signal_timeout)" in r.out
    assert f"tether job signal {job.id} approve --value JSON" in r.out
    r = run_main(capsys, "job", "status", str(job.id), "--json", db=database_url)
    w = r.json()["waiting_for"]
    assert (w["kind"], w["signal"], w["prompt"], w["schema"]) == (
        "signal", "approve", "Approve plan for $42?", {"type": "boolean"})

    r = run_main(capsys, "job", "list", "--waiting-for", "signal", "--json", db=database_url)
    assert [j["id"] for j in r.json()] == [job.id]

    r = run_main(capsys, "job", "signal", str(job.id), "approve", "--value", "true",
                 db=database_url)
    assert r.code == 0, r
    assert f"job {job.id}: signal 'approve' sent; waiting → queued" in r.out
    assert run_next(app).result is True
    r = run_main(capsys, "job", "status", str(job.id), "--json", db=database_url)
    assert r.json()["waiting_for"] is None


def test_bad_input_is_a_one_line_error(capsys, asking, database_url):
    app = asking
    job = app.submit("ask")
    run_next(app)
    r = run_main(capsys, "job", "signal", str(job.id), "approve", "--value", "{nope",
                 db=database_url)
    assert r.code == 2
    assert "--value is not valid JSON" in one_error_line(r, "invalid_payload")
    r = run_main(capsys, "job", "signal", str(job.id), "bad\nname", db=database_url)
    assert r.code == 2 and "signal name" in one_error_line(r, "invalid_argument")
    r = run_main(capsys, "job", "signal", "999999", "approve", db=database_url)
    assert r.code == 3 and one_error_line(r, "job_not_found")
    r = run_main(capsys, "job", "list", "--waiting-for", "me", db=database_url)
    assert r.code == 2 and "unknown kind 'me'" in one_error_line(r, "usage_error")
    assert app.get(job.id).state == JobState.WAITING, "nothing was sent"
    assert app.waits(job.id)[0].status == "open"
    app.cancel(job.id)
    r = run_main(capsys, "job", "signal", str(job.id), "approve", db=database_url)
    assert r.code == 2 and one_error_line(r, "invalid_transition")


def test_status_shows_a_timer_and_a_gathers_progress(capsys, app, database_url):
    @app.job("nap")
    def nap(ctx, payload):
        ctx.sleep(90)

    @app.job("kid")
    def kid(ctx, payload):
        return 1

    @app.job("mom")
    def mom(ctx, payload):
        return sum(ctx.gather([ctx.enqueue("kid", key=str(i)) for i in range(3)]))
    timer = app.submit("nap")
    run_next(app)
    r = run_main(capsys, "job", "status", str(timer.id), db=database_url)
    assert "waits for timer, wakes at" in flat(r.out), r
    parent = app.submit("mom")
    run_next(app)
    run_next(app)
    r = run_main(capsys, "job", "status", str(parent.id), db=database_url)
    assert "waits for children, 1/3 done" in flat(r.out), r
    r = run_main(capsys, "job", "list", "--waiting-for", "children", "--json",
                 db=database_url)
    assert [j["id"] for j in r.json()] == [parent.id]


def test_the_console_script_sends_a_signal(asking, database_url):
    app = asking
    job = app.submit("ask")
    run_next(app)
    r = tether("job", "signal", str(job.id), "approve", "--value", '{"approved": false}',
               "--json", db=database_url)
    assert r.code == 0, r
    assert r.json()["state"] == "queued"
    assert run_next(app).result == {"approved": False}
