"""Variants of the CLI's commands through ``tether.cli.main.main`` in this process: every error
class and its exit code, filters, output shapes. Same code as the console script, without the
cost of a Python start per case (``test_cli.py`` runs each command as a real subprocess)."""

from __future__ import annotations

import pytest

from tether import Estimate, Metered, Tether, Usage
from tether.cli.output import when
from tests.contract.test_waits import run_next
from tests.e2e.api_harness import migrate_database
from tests.e2e.clitools import APP, one_error_line, run_main


@pytest.fixture
def db(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("TETHER_APP", raising=False)
    url = f"sqlite:///{tmp_path}/tether.db"
    migrate_database(url)  # `tether db migrate`: read-only commands need a database
    return url


@pytest.fixture
def facade(db):
    app = Tether(db)
    yield app
    app.close()


def cli(capsys, db, *args, **kw):
    return run_main(capsys, *args, db=db, **kw)


def test_bare_commands_print_help_and_exit_2(capsys, db):
    for args in ((), ("job",), ("queue",), ("db",)):
        r = cli(capsys, db, *args)
        assert r.code == 2 and "Usage: tether" in r.out, args


def test_usage_errors_are_one_line_with_a_help_hint(capsys, db):
    r = cli(capsys, db, "job", "status", "abc")
    assert r.code == 2
    assert "see 'tether job status --help'" in one_error_line(r, "usage_error")
    r = cli(capsys, db, "job", "list", "--nope")
    line = one_error_line(r, "usage_error")
    assert r.code == 2 and "No such option" in line and "--nope" in line
    r = cli(capsys, db, "job", "list", "--state", "bogus")
    assert r.code == 2 and "unknown state 'bogus'" in one_error_line(r, "usage_error")
    r = cli(capsys, db, "--log-level", "LOUD", "job", "list")
    assert r.code == 2 and "unknown level" in one_error_line(r, "usage_error")


@pytest.mark.parametrize("args, code", [
    (("-p", "[1, 2"), "invalid_payload"),
    (("-f", "/nonexistent/payload.json"), "invalid_payload"),
    (("-p", "{}", "-f", "x.json"), "usage_error"),
    (("--run-after", "soonish"), "invalid_time"),
    (("--max-cost", "lots"), "usage_error"),
    (("--max-duration", "3 fortnights"), "invalid_duration"),
    (("--max-calls", "-1"), "usage_error"),
    (("--max-attempts", "0"), "usage_error"),
])
def test_bad_submissions_exit_2_and_store_nothing(capsys, db, facade, args, code):
    r = cli(capsys, db, "submit", "echo", *args)
    assert r.code == 2 and r.out == ""
    one_error_line(r, code)
    assert facade.list() == []


def test_payload_from_stdin_and_file(capsys, db, tmp_path):
    r = cli(capsys, db, "submit", "echo", "-f", "-", "--json", input='{"from": "stdin"}')
    assert r.code == 0 and r.json()["payload"] == {"from": "stdin"}
    path = tmp_path / "p.json"
    path.write_text('{"from": "file"}')
    r = cli(capsys, db, "submit", "echo", "-f", str(path), "--json")
    assert r.json()["payload"] == {"from": "file"}
    r = cli(capsys, db, "submit", "echo", "--json")
    assert r.json()["payload"] == {}


def test_submit_with_app_checks_the_type_and_applies_its_defaults(capsys, db):
    r = cli(capsys, db, "submit", "nope", "--app", APP)
    assert r.code == 2
    one_error_line(r, "unknown_job_type")
    r = cli(capsys, db, "submit", "boom", "--app", APP, "--json")
    assert r.code == 0 and r.json()["max_attempts"] == 1
    r = cli(capsys, db, "submit", "echo", "--app", "no_such_module:app")
    assert r.code == 2
    one_error_line(r, "configuration_error")


def test_run_after_accepts_iso_relative_and_unix_times(capsys, db):
    iso = cli(capsys, db, "submit", "echo", "--run-after", "2030-01-02T03:04:05Z", "--json")
    assert iso.json()["run_after"].startswith("2030-01-02T03:04:05")
    naive = cli(capsys, db, "submit", "echo", "--run-after", "2030-01-02T03:04:05", "--json")
    assert naive.json()["run_after"] == iso.json()["run_after"], "no offset means UTC"
    unix = cli(capsys, db, "submit", "echo", "--run-after", "1893553445", "--json")
    assert unix.json()["run_after"] == iso.json()["run_after"]


@pytest.mark.parametrize("args", [("job", "status", "42"), ("job", "events", "42"),
                                  ("job", "events", "42", "--follow"), ("job", "cancel", "42"),
                                  ("job", "pause", "42"), ("job", "resume", "42"),
                                  ("job", "retry", "42"), ("job", "requeue", "42"),
                                  ("job", "budget", "42", "--max-calls", "5")])
def test_every_job_command_exits_3_for_an_unknown_id(capsys, db, args):
    r = cli(capsys, db, *args)
    assert r.code == 3 and r.out == ""
    one_error_line(r, "job_not_found")


def test_list_filters(capsys, db, facade):
    a = facade.submit("echo", {}, project="alpha")
    b = facade.submit("steps", {}, project="alpha", queue="bulk")
    c = facade.submit("echo", {}, project="beta")
    facade.pause(c.id)
    ids = lambda *args: [j["id"] for j in cli(capsys, db, "job", "list", "--json", *args).json()]  # noqa: E731
    assert ids() == [c.id, b.id, a.id]
    assert ids("--project", "alpha") == [b.id, a.id]
    assert ids("--type", "echo") == [c.id, a.id]
    assert ids("--queue", "bulk") == [b.id]
    assert ids("--state", "PAUSED") == [c.id]
    assert ids("--limit", "1") == [c.id]
    assert ids("--before-id", str(c.id)) == [b.id, a.id]
    r = cli(capsys, db, "job", "list", "--project", "nobody")
    assert r.code == 0 and r.out.strip() == "no jobs"


def test_status_of_a_queued_job_and_events_table(capsys, db, facade):
    job = facade.submit("echo", {"x": 1}, idempotency_key="k-1",
                        budget={"max_cost_usd": "0.5", "max_output_tokens": 1000})
    r = cli(capsys, db, "job", "status", str(job.id))
    assert r.code == 0
    lines = {line.split()[0]: line for line in r.out.splitlines() if line.strip()}
    assert "queued" in lines["job"] and "$0 / $0.50" in lines["spent"]
    assert "out 0 / 1,000" in lines["tokens"] and "k-1" in lines["idempotency"]
    assert "attempts" in lines and "last" not in lines
    events = cli(capsys, db, "job", "events", str(job.id))
    assert "SEQ" in events.out and "submitted" in events.out and "- → queued" in events.out


def test_status_shows_the_version_and_which_version_no_worker_serves(capsys, db, facade):
    facade.register("drafter", lambda ctx, payload: None, version="3")
    job = facade.submit("drafter", {})
    r = cli(capsys, db, "job", "status", str(job.id))
    assert r.code == 0 and f"{job.id}  drafter version 3  queued" in r.out
    assert "no live worker serves type drafter version 3 on queue default" in r.out
    data = cli(capsys, db, "job", "status", str(job.id), "--json")
    assert '"version": "3"' in data.out and '"unserved": true' in data.out


def test_job_budget_variants(capsys, db, facade):
    job = facade.submit("echo", {}, budget={"max_cost_usd": "1"})
    r = cli(capsys, db, "job", "budget", str(job.id), "--max-cost", "$5", "--max-calls", "100")
    assert r.code == 0
    assert r.out.strip() == f"job {job.id}: queued; spent $0 / $5.00, calls 0 / 100"
    r = cli(capsys, db, "job", "budget", str(job.id))
    assert r.code == 2 and "name at least one limit" in one_error_line(r, "usage_error")
    facade.cancel(job.id)
    r = cli(capsys, db, "job", "budget", str(job.id), "--max-cost", "9")
    assert r.code == 2
    one_error_line(r, "invalid_transition")


def test_control_output_is_human_or_json(capsys, db, facade):
    job = facade.submit("echo", {})
    r = cli(capsys, db, "job", "pause", str(job.id))
    assert r.out.strip() == f"job {job.id}: queued → paused"
    r = cli(capsys, db, "job", "cancel", str(job.id), "--json")
    assert r.json()["id"] == job.id and r.json()["state"] == "cancelled"


def test_queue_and_worker_listings_when_empty(capsys, db):
    assert cli(capsys, db, "queue", "list").out.strip() == "no queues"
    assert cli(capsys, db, "queue", "list", "--json").json() == []
    assert cli(capsys, db, "workers").out.strip() == "no workers"
    assert cli(capsys, db, "workers", "--all", "--json").json() == []


def test_prune_rejects_a_bad_duration(capsys, db):
    r = cli(capsys, db, "prune", "--older-than", "3x")
    assert r.code == 2 and "--older-than" in one_error_line(r, "invalid_duration")
    r = cli(capsys, db, "prune")
    assert r.code == 2 and "--older-than" in one_error_line(r, "usage_error")


def test_worker_needs_an_app(capsys, db):
    r = cli(capsys, db, "worker")
    assert r.code == 2 and "--app" in one_error_line(r, "missing_app")
    r = cli(capsys, db, "worker", "--app", APP, "--queues", ",")
    assert r.code == 2 and "--queues" in one_error_line(r, "usage_error")
    r = cli(capsys, db, "worker", "--app", APP, "--prefetch", "-1")
    assert r.code == 2 and "--prefetch" in one_error_line(r, "usage_error")


def test_run_local_needs_an_app(capsys, db, facade):
    r = cli(capsys, db, "run", "echo", "--local")
    assert r.code == 2 and "--app" in one_error_line(r, "usage_error")
    assert facade.list() == []


def test_command_database_url_overrides_root_and_env(capsys, db, tmp_path, monkeypatch):
    other = f"sqlite:///{tmp_path}/other.db"
    monkeypatch.setenv("TETHER_DATABASE_URL", f"sqlite:///{tmp_path}/env.db")
    migrate_database(f"sqlite:///{tmp_path}/env.db")
    r = cli(capsys, db, "submit", "echo", "-q", "--database-url", other)
    assert r.code == 0
    assert [j["id"] for j in cli(capsys, db, "job", "list", "--json",
                                 "--database-url", other).json()] == [int(r.out)]
    assert cli(capsys, db, "job", "list", "--json").json() == [], "root --database-url"
    from tether.cli.main import main
    capsys.readouterr()
    assert main(["job", "list", "--json"]) == 0
    assert capsys.readouterr().out.strip() == "[]", "TETHER_DATABASE_URL (env.db) is empty"


def test_version(capsys, db):
    r = cli(capsys, db, "--version")
    assert r.code == 0 and r.out.startswith("tether ")


def test_status_of_a_job_paused_by_a_period_limit_says_when_it_resumes(capsys, db, facade):
    facade.register("two", lambda ctx, p: [ctx.call(
        key=f"k{i}", provider="simulated", model="sim-small",
        estimate=Estimate(input_tokens=10, max_output_tokens=10),
        fn=lambda: Metered("x", Usage(10, 10))) for i in range(2)])
    facade.set_project_budget("p", max_calls=1, period="week", timezone="Asia/Tokyo")
    facade.submit("two", {}, project="p")
    job = run_next(facade)
    assert job.error_code == "period_budget_exhausted"
    r = cli(capsys, db, "job", "status", str(job.id))
    assert r.code == 0
    assert f"{when(job.run_after)}, when the project's budget period ends" in r.out
    assert "the week ends" in r.out and "Asia/Tokyo" in r.out
