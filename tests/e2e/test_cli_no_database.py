"""A mistyped database URL creates nothing (docs/cli.md, "Who creates the database").

Read-only commands, ``tether serve`` and ``tether mcp`` open an existing tether database only:
on a missing SQLite file, a missing directory, a malformed URL or an empty PostgreSQL schema
they exit 2 with one error line and leave no file, directory or table behind; ``tether db
migrate`` then makes the same command work. Real ``tether`` processes, both backends.
"""

from __future__ import annotations

import os
import sqlite3

import psycopg
import pytest

from tests.conftest import PG_URL, require_postgres
from tests.procs import free_port
from tests.e2e.clitools import one_error_line, run_main, tether

READ_ONLY = [
    ["job", "list"], ["job", "status", "1"], ["job", "events", "1"], ["spend"],
    ["queue", "list"], ["schedule", "list"], ["workers"], ["token", "list"],
    ["prune", "--older-than", "30d"], ["job", "cancel", "1"], ["project", "budget", "p1"],
]


def _tables(backend: str, url: str) -> list[str]:
    if backend == "sqlite":
        path = url[len("sqlite:///"):]
        if not os.path.exists(path):
            return []
        with sqlite3.connect(path) as conn:
            return [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]


def test_job_list_on_a_fresh_url_creates_nothing_until_db_migrate(backend, database_url,
                                                                   tmp_path):
    before = sorted(os.listdir(tmp_path))
    r = tether("job", "list", db=database_url)
    assert r.code == 2, r
    line = one_error_line(r, "no_database")
    assert "no tether database at" in line and "tether db migrate" in line
    assert _tables(backend, database_url) == [] and sorted(os.listdir(tmp_path)) == before

    migrated = tether("db", "migrate", db=database_url)
    assert migrated.code == 0 and "applied migrations 1," in migrated.out, migrated
    after = tether("job", "list", db=database_url)
    assert after.code == 0 and "no jobs" in after.out, after


@pytest.mark.parametrize("argv", READ_ONLY, ids=" ".join)
def test_every_read_only_command_refuses_a_missing_database(backend, database_url, capsys,
                                                             argv):
    r = run_main(capsys, *argv, db=database_url)
    assert r.code == 2, r
    one_error_line(r, "no_database")
    assert _tables(backend, database_url) == []


@pytest.mark.parametrize("shape, code", [
    ("sqlite:{d}/tether.db", "configuration_error"),                # one slash
    ("sqlite:///{d}/nosuchdir/tether.db", "configuration_error"),  # a missing directory
    ("postgresql:{d}/tether.db", "configuration_error"),            # a mistyped scheme
    ("{d}/tether.db", "configuration_error"),                       # no scheme
])
def test_a_malformed_url_or_missing_directory_makes_nothing(tmp_path, shape, code):
    r = tether("job", "list", db=shape.format(d=tmp_path))
    assert r.code == 2, r
    one_error_line(r, code)
    assert list(tmp_path.iterdir()) == []


def test_db_migrate_does_not_make_a_missing_directory(tmp_path):
    r = tether("db", "migrate", db=f"sqlite:///{tmp_path}/nosuchdir/tether.db")
    assert r.code == 2, r
    assert "does not exist; create it first" in one_error_line(r, "configuration_error")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.postgres
def test_a_wrong_port_fails_at_once_with_one_error():
    require_postgres()
    url = f"postgresql://postgres:hunter2@127.0.0.1:{free_port()}/test"
    r = tether("job", "list", db=url)
    assert r.code == 1, r
    line = one_error_line(r, "store_unavailable")
    assert "cannot connect to PostgreSQL at postgresql://postgres:***@127.0.0.1:" in line
    assert "hunter2" not in r.err and "psycopg.pool" not in r.err


@pytest.mark.postgres
def test_a_missing_postgres_database_is_no_database():
    require_postgres()
    base = PG_URL.rsplit("/", 1)[0]
    r = tether("job", "list", db=f"{base}/tether_no_such_database")
    assert r.code == 2, r
    assert 'database "tether_no_such_database" does not exist' in one_error_line(
        r, "no_database")


def test_serve_refuses_to_start_on_a_missing_database(backend, database_url):
    r = tether("serve", "--insecure-no-auth", "--port", str(free_port()), db=database_url)
    assert r.code == 2, r
    assert "no tether database at" in one_error_line(r, "no_database")
    assert _tables(backend, database_url) == []


def test_mcp_refuses_to_start_on_a_missing_database(backend, database_url):
    r = tether("mcp", "--insecure-no-auth", db=database_url, input="")
    assert r.code == 2, r
    one_error_line(r, "no_database")
    assert _tables(backend, database_url) == []


def test_submit_creates_the_database_on_first_use(backend, database_url):
    r = tether("submit", "echo", "-p", "{}", db=database_url)
    assert r.code == 0, r
    assert "schema_migrations" in _tables(backend, database_url)
    assert tether("job", "status", "1", db=database_url).code == 0
