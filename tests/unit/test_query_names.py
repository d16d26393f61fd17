"""Every named statement in the backends' queries.sql is used by the code, and every statement
the code runs by name exists: a statement nobody runs is dead weight in both backends, and a
misspelt name would fail only when that path first runs."""

import ast
import functools
from pathlib import Path

from tether.store.queries import load_queries

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
RUNNERS = {"one", "all", "run", "many"}
"""The transaction handle's methods that take a statement's name first (``store/tx.py``)."""


def defined() -> set[str]:
    return {name for backend in ("sqlite", "postgres")
            for name in load_queries(SRC / "store" / backend / "queries.sql")}


@functools.cache
def literals() -> tuple[set[str], set[str]]:
    """Every string constant in the package, and the first arguments of ``x.one("name")``,
    ``x.all``, ``x.run`` and ``x.many`` calls in the store (the only code that holds a
    transaction handle)."""
    strings: set[str] = set()
    run: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
            if (path.is_relative_to(SRC / "store") and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in RUNNERS and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and node.args[0].value.isidentifier()):
                run.add(node.args[0].value)
    return strings, run


def test_every_named_statement_is_used():
    strings, _ = literals()
    assert sorted(defined() - strings) == []


def test_every_statement_run_by_name_exists():
    _, run = literals()
    assert sorted(run - defined()) == []
