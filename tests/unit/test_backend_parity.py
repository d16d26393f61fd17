"""Both SQL backends stay at parity: the same named statements in the same files, the same
migrations, and the same time parameters."""

import re
from pathlib import Path

from tether.store.migrate import discover
from tether.store.queries import fragments, gather, load_queries
from tether.store.tx import TIME_PARAMS

STORE = Path(__file__).resolve().parents[2] / "src" / "tether" / "store"


# Statements one backend needs because the other does the same work inside another statement.
ONLY_SQLITE = {
    "wait_children_done_many",  # PostgreSQL counts a batch's children inside succeed_many
}
ONLY_POSTGRES = {
    "flow_lock",  # SQLite claims one at a time anyway (its write lock)
    "reserve_call", "settle_call",  # a call in one round trip; SQLite has no round trips
}


def test_both_backends_define_the_same_query_names():
    sqlite = set(load_queries(STORE / "sqlite" / "queries")) - ONLY_SQLITE
    postgres = set(load_queries(STORE / "postgres" / "queries")) - ONLY_POSTGRES
    assert sorted(sqlite - postgres) == [], "missing from postgres/queries/"
    assert sorted(postgres - sqlite) == [], "missing from sqlite/queries/"


def _files(backend: str) -> dict[str, str]:
    """Each name (a query's or a fragment's) -> the file of ``backend/queries/`` holding it."""
    return {name: path.name for path in sorted((STORE / backend / "queries").glob("*.sql"))
            for name in re.findall(r"^--\s*(?:name|fragment):\s*(\w+)", path.read_text(),
                                   re.MULTILINE)}


def test_both_backends_keep_a_statement_in_the_same_file():
    """A reader who found a statement in one backend finds its twin under the same file name."""
    sqlite, postgres = _files("sqlite"), _files("postgres")
    moved = {n: (sqlite[n], postgres[n]) for n in sqlite.keys() & postgres.keys()
             if sqlite[n] != postgres[n]}
    assert moved == {}
    assert set(sqlite.values()) - set(postgres.values()) == set()
    assert set(postgres.values()) - set(sqlite.values()) == set()


# Fragments one backend shares between statements that the other writes differently.
FRAGMENTS_ONLY_POSTGRES = {
    "claim_tail",  # SQLite writes a claim's attempts, events and counter from Python
}


def test_both_backends_define_the_same_fragments():
    sqlite = set(fragments(gather(STORE / "sqlite" / "queries")))
    postgres = set(fragments(gather(STORE / "postgres" / "queries")))
    assert sorted(sqlite - postgres) == [], "missing from postgres/queries/"
    assert sorted(postgres - FRAGMENTS_ONLY_POSTGRES - sqlite) == [], \
        "missing from sqlite/queries/"


def test_both_backends_have_the_same_migration_versions():
    sqlite = [(m.version, m.name) for m in discover(STORE / "sqlite" / "migrations")]
    postgres = [(m.version, m.name) for m in discover(STORE / "postgres" / "migrations")]
    assert sqlite == postgres


def test_every_time_parameter_is_one_the_backends_bind_as_a_time():
    """Store code passes times as unix seconds under the names in ``TIME_PARAMS``, and the
    PostgreSQL transaction binds exactly those as timestamptz: a time parameter under another
    name would reach PostgreSQL as a bare number."""
    text = gather(STORE / "postgres" / "queries")
    names = set(re.findall(r"%\((\w+)\)s", text))
    timelike = {n for n in names if re.fullmatch(r"now|since|before|cutoff|at|\w+_at|run_after",
                                                 n)}
    assert timelike - TIME_PARAMS == set(), "time parameters the backends would not convert"
    assert TIME_PARAMS - names == set(), "names in TIME_PARAMS that no statement uses"
    typed = set(re.findall(r"%\((\w+)\)s::timestamptz", text))
    assert typed <= TIME_PARAMS
