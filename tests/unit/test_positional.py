"""SQLite binds tuples, not dicts: ``positional`` numbers a query's ``:names`` (outside string
literals and comments) and builds the tuple, so every statement keeps its readable names."""

import re

import pytest

from tether.store.queries import positional
from tether.store.sqlite.tx import BOUND, QUERIES


def test_names_are_numbered_once_each_and_literals_are_left_alone():
    sql, bind = positional("SELECT :a, ':b', :a || 'x:y', :c -- :d\nFROM t WHERE v = :c")
    assert sql == "SELECT ?1, ':b', ?1 || 'x:y', ?2 -- :d\nFROM t WHERE v = ?2"
    assert bind({"a": 1, "c": 2, "unused": 3}) == (1, 2)


@pytest.mark.parametrize("sql, params, want", [
    ("SELECT 1", {"x": 1}, ()),
    ("SELECT :only", {"only": "v"}, ("v",)),
])
def test_no_name_and_one_name_still_bind_tuples(sql, params, want):
    assert positional(sql)[1](params) == want


def test_a_missing_parameter_is_an_error_not_a_null():
    _, bind = positional("INSERT INTO t VALUES (:a, :b)")
    with pytest.raises(KeyError):
        bind({"a": 1})


def test_every_sqlite_query_binds_each_of_its_names_and_keeps_none_unbound():
    for name, sql in QUERIES.items():
        text, bind = BOUND[name]
        names = list(dict.fromkeys(_named(sql)))
        assert bind({n: i for i, n in enumerate(names)}) == tuple(range(len(names))), name
        assert _named(text) == [], name
        assert set(re.findall(r"\?(\d+)", _unquoted(text))) == {
            str(i + 1) for i in range(len(names))}, name


def _unquoted(sql):
    return re.sub(r"'(?:[^']|'')*'|--[^\n]*", "", sql)


def _named(sql):
    return re.findall(r"(?<![:\w]):([A-Za-z_]\w*)", _unquoted(sql))
