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


def _pg_available() -> bool:
    try:
        import tether.store.postgres.store  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param == "postgres" and not _pg_available():
        if os.environ.get("CI"):
            pytest.fail("the PostgreSQL backend is missing; CI never skips it")
        pytest.skip("PostgreSQL backend not built yet")
    return request.param


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
