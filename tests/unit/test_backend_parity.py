"""Both SQL backends stay at parity: the same named statements and the same migrations."""

from pathlib import Path

from tether.store.migrate import discover
from tether.store.queries import load_queries

STORE = Path(__file__).resolve().parents[2] / "src" / "tether" / "store"


def test_both_backends_define_the_same_query_names():
    sqlite = set(load_queries(STORE / "sqlite" / "queries.sql"))
    postgres = set(load_queries(STORE / "postgres" / "queries.sql"))
    assert sorted(sqlite - postgres) == [], "missing from postgres/queries.sql"
    assert sorted(postgres - sqlite) == [], "missing from sqlite/queries.sql"


def test_both_backends_have_the_same_migration_versions():
    sqlite = [(m.version, m.name) for m in discover(STORE / "sqlite" / "migrations")]
    postgres = [(m.version, m.name) for m in discover(STORE / "postgres" / "migrations")]
    assert sqlite == postgres
