"""``tether type list|pause|resume`` and ``tether limit list|set|clear`` on both backends (in
process, the same code as the console script)."""

from __future__ import annotations

import pytest

from tether import Tether
from tests.e2e.clitools import one_error_line, run_main


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("TETHER_APP", raising=False)


@pytest.fixture
def seeded(database_url):
    app = Tether(database_url)

    @app.job("summarize")
    def summarize(ctx, payload):
        return payload

    for customer in ("c1", "c1", "c2"):
        app.submit("summarize", {"customer": customer}, project="acme")
    yield app
    app.close()


def cli(capsys, db, *args):
    return run_main(capsys, *args, db=db)


def test_type_pause_list_resume(capsys, database_url, seeded):
    r = cli(capsys, database_url, "type", "pause", "summarize")
    assert r.code == 0 and r.out.strip() == "type summarize: paused"
    table = cli(capsys, database_url, "type", "list")
    assert table.out.split()[:4] == ["TYPE", "STATUS", "QUEUED", "RUNNING"]
    row = next(line for line in table.out.splitlines() if line.startswith("summarize"))
    assert row.split()[:3] == ["summarize", "paused", "3"]
    assert seeded.store.claim("w", queues=None, limit=9, lease_ttl=30) == []
    r = cli(capsys, database_url, "type", "resume", "summarize", "--json")
    assert r.json() == {"name": "summarize", "paused": False, "counts": {"queued": 3}}
    assert len(seeded.store.claim("w", queues=None, limit=9, lease_ttl=30)) == 3


def test_pausing_an_unknown_type_is_one_error_line(capsys, database_url, seeded):
    r = cli(capsys, database_url, "type", "pause", "nope")
    assert r.code != 0 and "nope" in one_error_line(r, "unknown_job_type")


def test_limit_set_list_clear(capsys, database_url, seeded):
    r = cli(capsys, database_url, "limit", "set", "type", "summarize", "--per-key", "1",
            "--key", "customer", "--total", "5")
    assert r.code == 0 and r.out.strip() == "type summarize: at most 1 per customer, 5 in all"
    assert len(seeded.store.claim("w", queues=None, limit=9, lease_ttl=30)) == 2
    table = cli(capsys, database_url, "limit", "list")
    rows = [line.split() for line in table.out.splitlines()[2:] if line.strip()]
    assert table.out.split()[:4] == ["SCOPE", "NAME", "KEY", "RUNNING/LIMIT"]
    assert rows == [["type", "summarize", "(all)", "2/5"], ["type", "summarize", "c1", "1/1"],
                    ["type", "summarize", "c2", "1/1"]]
    as_json = cli(capsys, database_url, "limit", "list", "--json").json()
    assert as_json["limits"] == [{"scope": "type", "name": "summarize", "key": "customer",
                                  "per_key": 1, "total": 5}]
    assert cli(capsys, database_url, "limit", "clear", "type", "summarize").out.strip() == (
        "type summarize: limit cleared")
    assert cli(capsys, database_url, "limit", "list").out.strip() == "no limits"


def test_a_limit_without_a_number_is_refused(capsys, database_url, seeded):
    r = cli(capsys, database_url, "limit", "set", "queue", "default")
    assert r.code != 0 and "per_key" in one_error_line(r, "invalid_argument")
