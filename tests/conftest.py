"""Shared fixtures: a FakeClock, and a store per backend for the contract suite; what a test
needs from outside Python (PostgreSQL, Chromium, PgBouncer): skipped without it, except in CI,
and named at the end of the run with the package that provides it."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether import FakeClock, Tether

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("TETHER_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgres"]
CHROMIUM = os.environ.get("TETHER_CHROMIUM", "/usr/bin/chromium")
TOOLS = {"chromium": "chromium", "pgbouncer": "pgbouncer"}
"""The programs some tests run, each with the Debian package that installs it."""


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


def require_tool(tool: str, problem: str | None) -> None:
    """Skip a test that needs ``tool`` (a key of ``TOOLS``) when ``problem`` says it is missing,
    except in CI, where it fails. The skip reason starts ``needs TOOL:``, which the run's
    summary counts (it reads the reports, so it also counts skips in xdist workers)."""
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"{problem}; CI never skips the {tool} tests")
        pytest.skip(f"needs {tool}: {problem}")


@pytest.fixture(scope="session")
def needs_chromium() -> str:
    """The Chromium the dashboard's browser tests drive (``TETHER_CHROMIUM``)."""
    require_tool("chromium", None if Path(CHROMIUM).exists()
                 else f"no Chromium at {CHROMIUM} (set TETHER_CHROMIUM)")
    return CHROMIUM


def pytest_terminal_summary(terminalreporter) -> None:
    """One line per missing tool whose tests were skipped: how many, and how to get it."""
    for tool, package in TOOLS.items():
        skipped = [r for r in terminalreporter.stats.get("skipped", [])
                   if f"needs {tool}:" in str(r.longrepr)]
        if skipped:
            terminalreporter.write_line(
                f"{len(skipped)} tests skipped without {tool}: install it with "
                f"`sudo apt-get install {package}` (Debian, Ubuntu), as .ci/run does",
                yellow=True)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request) -> str:
    if request.param == "postgres":
        require_postgres()
    return request.param


@pytest.fixture
def pg_url(request) -> Iterator[str]:
    """A fresh private schema on the shared PostgreSQL server (for postgres-only tests); one
    already migrated for a test that uses a fixture of ``OPENS_AN_APP``, as ``database_url``
    does."""
    require_postgres()
    from tests.pg import fresh_schema_url, migrated_schema_url
    if _migrates(request):
        yield from migrated_schema_url(PG_URL)
    else:
        yield fresh_schema_url(PG_URL, f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory) -> Path:
    """A SQLite database file as migrating an empty one leaves it, made once per process."""
    path = tmp_path_factory.mktemp("migrated") / "tether.db"
    template = Tether(f"sqlite:///{path}")
    template.migrate()
    template.close()
    return path


OPENS_AN_APP = {"app", "local", "hooks", "seeded"}
"""Fixtures (by name, in any test module) that open a ``Tether`` on ``database_url`` or
``pg_url`` with its defaults, which migrates the database on first use."""


def _migrates(request) -> bool:
    return not OPENS_AN_APP.isdisjoint(request.fixturenames)


@pytest.fixture
def database_url(backend, tmp_path, request) -> Iterator[str]:
    """An empty database of ``backend`` for this test alone; for a test that uses a fixture of
    ``OPENS_AN_APP`` one already migrated, as that fixture would leave it: a copy of a file
    migrated once (SQLite), a reused schema reset after each test (PostgreSQL,
    ``tests.pg.migrated_schema_url``), so that contract tests do not each pay for migrating."""
    migrated = _migrates(request)
    if backend == "sqlite":
        if migrated:
            shutil.copyfile(request.getfixturevalue("_migrated_sqlite"), tmp_path / "tether.db")
        yield f"sqlite:///{tmp_path}/tether.db"
    elif migrated:
        from tests.pg import migrated_schema_url
        yield from migrated_schema_url(PG_URL)
    else:
        from tests.pg import fresh_schema_url
        yield fresh_schema_url(PG_URL, f"t_{uuid.uuid4().hex[:12]}")


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
