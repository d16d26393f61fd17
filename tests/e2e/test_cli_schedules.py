"""``tether schedule list|add|pause|resume|delete`` on both backends (in process, the same
code as the console script), and once as a real subprocess."""

from __future__ import annotations

import pytest

from tether import Tether
from tests.e2e.api_harness import migrate_database
from tests.e2e.clitools import one_error_line, run_main, tether


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("TETHER_APP", raising=False)


def cli(capsys, db, *args):
    return run_main(capsys, *args, db=db)


def test_add_list_pause_resume_delete(capsys, database_url):
    r = cli(capsys, database_url, "schedule", "add", "nightly-eval", "--cron", "0 3 * * *",
            "--tz", "Europe/Berlin", "--type", "eval", "-p", '{"suite": "full"}',
            "--max-cost", "2.5", "--catch-up", "all", "--project", "p1", "--json")
    assert r.code == 0, r
    saved = r.json()
    assert (saved["name"], saved["timezone"], saved["catch_up"], saved["payload"],
            saved["budget"]["max_cost_usd"], saved["project"]) == (
        "nightly-eval", "Europe/Berlin", "all", {"suite": "full"}, "2.5", "p1")
    assert saved["next_run_at"].endswith(("T02:00:00+00:00", "T01:00:00+00:00"))

    r = cli(capsys, database_url, "schedule", "list")
    assert r.code == 0
    header, row = [line for line in r.out.splitlines() if line.strip() and "──" not in line]
    assert "NEXT RUN (UTC)" in header and "STATUS" in header
    assert row.split()[:4] == ["nightly-eval", "0", "3", "*"] and "active" in row
    assert saved["next_run_at"][:10] in row

    listed = cli(capsys, database_url, "schedule", "list", "--json").json()
    assert [s["name"] for s in listed] == ["nightly-eval"]
    assert cli(capsys, database_url, "schedule", "list", "--project", "p2", "--json").json() == []

    paused = cli(capsys, database_url, "schedule", "pause", "nightly-eval", "--json").json()
    assert paused["paused"] is True and paused["next_run_at"] is None
    assert "paused" in cli(capsys, database_url, "schedule", "list").out
    resumed = cli(capsys, database_url, "schedule", "resume", "nightly-eval", "--json").json()
    assert resumed["paused"] is False and resumed["next_run_at"] == saved["next_run_at"]

    r = cli(capsys, database_url, "schedule", "delete", "nightly-eval")
    assert r.code == 0 and "deleted" in r.out
    assert cli(capsys, database_url, "schedule", "list").out.strip() == "no schedules"
    app = Tether(database_url)
    try:
        assert app.schedules() == []
    finally:
        app.close()


@pytest.mark.parametrize("args, code, exit_code", [
    (["add", "s", "--cron", "0 3 * *", "--type", "t"], "invalid_argument", 2),
    (["add", "s", "--cron", "0 3 * * *", "--tz", "Nowhere/X", "--type", "t"],
     "invalid_argument", 2),
    (["add", "s", "--cron", "0 3 * * *", "--type", "t", "--catch-up", "some"],
     "invalid_argument", 2),
    (["add", "bad name", "--cron", "0 3 * * *", "--type", "t"], "invalid_argument", 2),
    (["pause", "missing"], "schedule_not_found", 3),
    (["resume", "missing"], "schedule_not_found", 3),
    (["delete", "missing"], "schedule_not_found", 3),
    (["add", "s", "--type", "t"], "usage_error", 2),
])
def test_errors_are_one_line_with_their_code_and_exit_status(capsys, tmp_path, args, code,
                                                             exit_code):
    url = f"sqlite:///{tmp_path}/t.db"
    migrate_database(url)
    r = cli(capsys, url, "schedule", *args)
    assert r.code == exit_code, r
    one_error_line(r, code)


def test_the_console_script_lists_schedules(tmp_path):
    db = f"sqlite:///{tmp_path}/t.db"
    assert tether("schedule", "add", "m", "--cron", "*/5 * * * *", "--type", "t",
                  db=db).code == 0
    r = tether("schedule", "list", "--json", db=db)
    assert r.code == 0 and r.json()[0]["cron"] == "*/5 * * * *"
