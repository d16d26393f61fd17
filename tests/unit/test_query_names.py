"""Every named statement in the backends' queries.sql is used by the code, and every statement
the store runs by name exists: a statement nobody runs is dead weight in both backends, and a
misspelt name would fail only when that path first runs."""

import functools
import re
from pathlib import Path

from tether.store.queries import fragments, load_queries

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
RUN = re.compile(r"\.(?:one|all|run|many)\(\s*\"(\w+)\"")
"""A statement run by name through the transaction handle (``store/tx.py``: one, all, run,
many take the name first); only the store holds such a handle."""


def defined() -> set[str]:
    return {name for backend in ("sqlite", "postgres")
            for name in load_queries(SRC / "store" / backend / "queries.sql")}


@functools.cache
def code() -> str:
    return "\n".join(path.read_text() for path in sorted(SRC.rglob("*.py")))


def test_every_named_statement_is_used():
    quoted = set(re.findall(r"[\"'](\w+)[\"']", code()))
    assert sorted(defined() - quoted) == []


def test_every_statement_run_by_name_exists():
    store = "\n".join(p.read_text() for p in sorted((SRC / "store").rglob("*.py")))
    assert sorted(set(RUN.findall(store)) - defined()) == []


def test_every_fragment_is_included():
    """A fragment no statement includes is dead weight, as an unused statement is."""
    for backend in ("sqlite", "postgres"):
        text = (SRC / "store" / backend / "queries.sql").read_text()
        included = set(re.findall(r"^\s*--\s*include:\s*(\w+)\s*$", text, re.MULTILINE))
        assert sorted(set(fragments(text)) - included) == [], backend
