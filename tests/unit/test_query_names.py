"""Every named statement in the backends' ``queries/`` folders is used by the code, and every
statement the store runs by name exists: a statement nobody runs is dead weight in both backends,
and a misspelt name would fail only when that path first runs. The loader itself refuses a name
two files define (``gather``)."""

import functools
import re
from pathlib import Path

import pytest

from tether.store.queries import fragments, gather, load_queries

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
RUN = re.compile(r"\.(?:one|all|run|many)\(\s*\"(\w+)\"")
"""A statement run by name through the transaction handle (``store/tx.py``: one, all, run,
many take the name first); only the store holds such a handle."""


def defined() -> set[str]:
    return {name for backend in ("sqlite", "postgres")
            for name in load_queries(SRC / "store" / backend / "queries")}


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
        text = gather(SRC / "store" / backend / "queries")
        included = set(re.findall(r"^\s*--\s*include:\s*(\w+)\s*$", text, re.MULTILINE))
        assert sorted(set(fragments(text)) - included) == [], backend


def test_a_name_two_files_define_is_refused_naming_both(tmp_path):
    (tmp_path / "jobs.sql").write_text("-- name: get_job\nSELECT 1;\n")
    (tmp_path / "waits.sql").write_text("-- name: wait_get\nSELECT 2;\n\n"
                                        "-- name: get_job\nSELECT 3;\n")
    with pytest.raises(ValueError, match=r"'get_job' is defined in both jobs.sql and waits.sql"):
        load_queries(tmp_path)


def test_a_fragment_and_a_query_of_one_name_are_refused(tmp_path):
    (tmp_path / "a.sql").write_text("-- fragment: held\nSELECT 1\n")
    (tmp_path / "b.sql").write_text("-- name: held\nSELECT 2;\n")
    with pytest.raises(ValueError, match=r"'held' is defined in both a.sql and b.sql"):
        gather(tmp_path)


def test_a_name_one_file_defines_twice_is_refused(tmp_path):
    (tmp_path / "jobs.sql").write_text("-- name: get_job\nSELECT 1;\n\n"
                                       "-- name: get_job\nSELECT 2;\n")
    with pytest.raises(ValueError, match=r"both jobs.sql and jobs.sql"):
        load_queries(tmp_path)


def test_the_folder_is_read_whole_in_name_order(tmp_path):
    """Only ``*.sql`` files count, and each statement keeps its own text whatever file follows
    it (the comment heading the next file is not part of the last statement before it)."""
    (tmp_path / "b.sql").write_text("-- Second.\n\n-- name: two\nSELECT 2;\n")
    (tmp_path / "a.sql").write_text("-- First.\n\n-- name: one\nSELECT 1;\n")
    (tmp_path / "README.md").write_text("-- name: not_sql\n")
    assert gather(tmp_path).index("name: one") < gather(tmp_path).index("name: two")
    assert load_queries(tmp_path) == {"one": "SELECT 1", "two": "SELECT 2"}


def test_no_backend_keeps_a_single_queries_file_beside_its_folder():
    """The loader reads ``queries/`` only: a ``queries.sql`` left beside it (say, brought back
    by a merge) would be edited in vain."""
    left = [b for b in ("sqlite", "postgres") if (SRC / "store" / b / "queries.sql").exists()]
    assert left == []
