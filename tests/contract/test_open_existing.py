"""Opening a database that must already exist (``create=False``, what the read-only
interfaces do): nothing is created or migrated, and a URL that holds no tether database is
one ``NoDatabase`` error; a malformed or unreachable URL is refused at once. Both backends."""

from __future__ import annotations

import logging

import psycopg
import pytest

from tether import Tether
from tether.errors import ConfigurationError, NoDatabase, StoreError
from tether.store.open import open_store
from tether.store.sqlite.store import path_from_url
from tests.conftest import PG_URL, require_postgres
from tests.procs import free_port


def _tables(backend: str, url: str) -> list[str]:
    """Every table the URL's database (SQLite) or schema (PostgreSQL) holds."""
    if backend == "sqlite":
        import sqlite3
        with sqlite3.connect(path_from_url(url)) as conn:
            return [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]


def _nothing_created(backend: str, url: str) -> bool:
    if backend == "sqlite":
        import os
        return not os.path.exists(path_from_url(url))
    return _tables(backend, url) == []


def test_an_empty_url_is_no_database_and_stays_empty(backend, database_url):
    with pytest.raises(NoDatabase) as caught:
        open_store(database_url, create=False)
    assert caught.value.code == "no_database"
    assert "tether db migrate" in caught.value.message
    assert _nothing_created(backend, database_url)


def test_a_read_only_app_refuses_on_first_use_and_creates_nothing(backend, database_url):
    app = Tether(database_url, create_database=False)
    with pytest.raises(NoDatabase):
        app.list()
    assert _nothing_created(backend, database_url)


def test_a_migrated_database_opens_without_creating(backend, database_url):
    Tether(database_url).migrate()
    app = Tether(database_url, create_database=False)
    try:
        assert app.list() == []
    finally:
        app.close()


def test_a_schema_missing_a_migration_is_refused_not_upgraded(backend, database_url):
    writer = Tether(database_url)
    writer.migrate()
    writer.close()
    if backend == "sqlite":
        import sqlite3
        with sqlite3.connect(path_from_url(database_url)) as conn:
            last = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
            conn.execute("DELETE FROM schema_migrations WHERE version = ?", (last,))
    else:
        with psycopg.connect(database_url, autocommit=True) as conn:
            last = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
            conn.execute("DELETE FROM schema_migrations WHERE version = %s", (last,))
    with pytest.raises(NoDatabase, match=f"lacks migration {last}: run `tether db migrate`"):
        open_store(database_url, create=False)
    assert last not in _versions(backend, database_url)


def _versions(backend: str, url: str) -> list[int]:
    if backend == "sqlite":
        import sqlite3
        with sqlite3.connect(path_from_url(url)) as conn:
            return [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]


# --- SQLite: URLs that do not mean what they seem, and missing directories ----------------------

@pytest.mark.parametrize("shape", [
    "sqlite:{d}/tether.db",              # one slash ({d} is absolute)
    "sqlite://host{d}/tether.db",        # a host part
    "sqlite:///{d}/tether.db?mode=ro",   # a query string tether would ignore
    "{d}/tether.db",                     # no scheme at all
    "postgresql:{d}/tether.db",          # a mistyped scheme
])
@pytest.mark.parametrize("create", [True, False])
def test_a_malformed_url_is_refused_before_anything_is_made(tmp_path, shape, create):
    url = shape.format(d=tmp_path)
    with pytest.raises(ConfigurationError, match="malformed SQLite URL|unsupported database URL"):
        open_store(url, create=create)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("create", [True, False])
def test_a_missing_directory_is_an_error_never_made(tmp_path, create):
    url = f"sqlite:///{tmp_path}/nosuchdir/tether.db"
    with pytest.raises(ConfigurationError, match="nosuchdir.* does not exist"):
        open_store(url, create=create)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_sqlite_file_is_no_database_and_is_not_written(tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(NoDatabase):
        open_store(f"sqlite:///{path}", create=False)
    assert path.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


# --- PostgreSQL: an unreachable server or database says so at once ------------------------------

def _with(url: str, **parts: str) -> str:
    from urllib.parse import urlsplit, urlunsplit
    split = urlsplit(url)
    netloc = parts.get("netloc", split.netloc)
    return urlunsplit(split._replace(netloc=netloc, path=parts.get("path", split.path)))


@pytest.mark.postgres
def test_a_wrong_port_is_one_error_naming_the_url_without_password(caplog):
    require_postgres()
    port = free_port()  # nothing listens there
    url = _with(PG_URL, netloc=f"postgres:hunter2@127.0.0.1:{port}")
    with caplog.at_level(logging.WARNING), pytest.raises(StoreError) as caught:
        open_store(url, create=False)
    message = caught.value.message
    assert f"cannot connect to PostgreSQL at postgresql://postgres:***@127.0.0.1:{port}/" in message
    assert "hunter2" not in message
    assert [r for r in caplog.records if r.name.startswith("psycopg")] == []


@pytest.mark.postgres
@pytest.mark.parametrize("create", [True, False])
def test_a_missing_postgres_database_is_no_database(create):
    require_postgres()
    url = _with(PG_URL, path="/tether_no_such_database")
    with pytest.raises(NoDatabase, match='database "tether_no_such_database" does not exist'):
        open_store(url, create=create)


@pytest.mark.postgres
def test_the_shared_postgres_database_is_not_migrated_into():
    require_postgres()
    url = _with(PG_URL, path="/postgres")
    with psycopg.connect(url) as conn:
        if conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()[0]:
            pytest.skip("the server's postgres database already holds a tether schema")
    with pytest.raises(NoDatabase, match="no tether database at"):
        open_store(url, create=False)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()[0] is None
