"""Shared fixtures: a FakeClock, and a store per backend for the contract suite."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from tether import FakeClock, Tether

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("TETHER_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


_pg_problem: list[str | None] = []


def _pg_unavailable() -> str | None:
    """Why PostgreSQL tests cannot run (backend missing, server unreachable), or None."""
    if not _pg_problem:
        try:
            import tether.store.postgres.store  # noqa: F401
            from tests.pg import server_error
        except ImportError as exc:
            _pg_problem.append(f"PostgreSQL backend not importable: {exc}")
        else:
            err = server_error(PG_URL)
            _pg_problem.append(err and f"PostgreSQL at {PG_URL} unreachable: {err}")
    return _pg_problem[0]


def require_postgres() -> None:
    """Skip a PostgreSQL test when the server is missing, except in CI, where it fails."""
    problem = _pg_unavailable()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"{problem}; CI never skips PostgreSQL tests")
        pytest.skip(problem)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request) -> str:
    if request.param == "postgres":
        require_postgres()
    return request.param


@pytest.fixture
def pg_url() -> str:
    """A fresh private schema on the shared PostgreSQL server (for postgres-only tests)."""
    require_postgres()
    from tests.pg import fresh_schema_url
    return fresh_schema_url(PG_URL, f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def database_url(backend, tmp_path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/tether.db"
    from tests.pg import fresh_schema_url
    return fresh_schema_url(PG_URL, f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/tether.db"


@pytest.fixture
def app(database_url, clock):
    a = Tether(database_url, clock=clock)
    yield a
    a.close()


@pytest.fixture
def store(app):
    return app.store
