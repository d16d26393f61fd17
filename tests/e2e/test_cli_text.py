"""What the CLI says: help text, suggestions, usage errors and warnings, in this process
through ``tether.cli.main.main`` (the console script's code)."""

from __future__ import annotations

import pytest

from tether import Tether
from tether.demo import verdict
from tests.e2e.clitools import APP, one_error_line, run_main


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("TETHER_APP", raising=False)


@pytest.fixture
def db(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/tether.db"


def cli(capsys, db, *args):
    return run_main(capsys, *args, db=db)


def test_root_help_prints_one_example_per_line(capsys, db):
    r = cli(capsys, db, "--help")
    assert r.code == 0
    lines = [line.strip() for line in r.out.splitlines()]
    examples = [line for line in lines if line.startswith("tether ")]
    assert [e.split()[1] for e in examples] == ["worker", "run", "submit", "job", "job", "spend"]
    assert all(e.count("tether ") == 1 for e in examples), examples
    assert examples[-1] == "tether spend --by model --since 7d"
    assert any(line.startswith("Data goes to stdout") for line in lines)


@pytest.mark.parametrize("args, suggestion", [
    (("jbo",), "Did you mean 'job'?"),
    (("job", "stauts", "1"), "Did you mean 'status'?"),
    (("schedule", "ad"), "Did you mean 'add'?"),
])
def test_a_mistyped_command_is_suggested_once(capsys, db, args, suggestion):
    r = cli(capsys, db, *args)
    assert r.code == 2
    line = one_error_line(r, "usage_error")
    assert line.count("Did you mean") == 1 and suggestion in line, line


@pytest.mark.parametrize("command", ["submit", "run"])
def test_the_job_type_argument_is_not_named_after_a_python_parameter(capsys, db, command):
    r = cli(capsys, db, command, "--help")
    assert r.code == 0
    assert "type_" not in r.out and "TYPE" in r.out
    r = cli(capsys, db, command)
    assert "Missing argument 'TYPE'" in one_error_line(r, "usage_error")


@pytest.mark.parametrize("args, command", [
    (("submit", "echo"), "submit"),
    (("run", "echo"), "run"),
    (("job", "budget", "1"), "job budget"),
    (("job", "fork", "1", "--from-stage", "s"), "job fork"),
    (("project", "budget", "p"), "project budget"),
    (("schedule", "add", "s", "--cron", "@daily", "--type", "echo"), "schedule add"),
])
def test_a_bad_max_cost_is_a_usage_error_that_names_the_flag(capsys, db, args, command):
    r = cli(capsys, db, *args, "--max-cost", "abc")
    assert r.code == 2 and r.out == ""
    line = one_error_line(r, "usage_error")
    assert "Invalid value for '--max-cost': 'abc' is not an amount in USD" in line, line
    assert f"see 'tether {command} --help'" in line, line


def test_a_schedule_added_without_app_warns_that_its_type_is_unchecked(capsys, database_url):
    r = cli(capsys, database_url, "schedule", "add", "s", "--cron", "@daily", "--type", "nosuch")
    assert r.code == 0 and "schedule s saved" in r.out
    assert "warning: job type 'nosuch' was not checked" in r.err and "--app" in r.err
    app = Tether(database_url)
    try:
        assert [s.type for s in app.schedules()] == ["nosuch"]
    finally:
        app.close()
    r = cli(capsys, database_url, "schedule", "add", "s", "--cron", "@daily", "--type", "echo",
            "--app", APP)
    assert r.code == 0 and "echo in default/default" in r.out and r.err == ""
    r = cli(capsys, database_url, "schedule", "add", "s", "--cron", "@daily", "--type", "nosuch",
            "--app", APP)
    assert r.code == 2
    one_error_line(r, "unknown_job_type")


def test_the_demo_verdict_agrees_with_one_unconfirmed_call():
    from decimal import Decimal as d
    one = verdict(d("2.5"), d("2"), 1, d("0.5"))
    assert ("because the 1 call in flight at the kill was never confirmed, so it stays counted "
            "as spent at its worst case ($0.500000)") in one
    many = verdict(d("2.5"), d("2"), 3, d("0.5"))
    assert "the 3 calls in flight at the kill were never confirmed, so they stay" in many
