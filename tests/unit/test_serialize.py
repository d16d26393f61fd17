"""Canonical JSON: one text per value, the value it reads back as, and a precise refusal."""

from decimal import Decimal

import pytest

from tether.core.serialize import dumps, dumps_back
from tether.errors import InvalidPayload


def test_a_value_and_what_it_reads_back_as():
    text, back = dumps_back({"b": [1, 2.5, None, True], "a": "é"})
    assert text == '{"a":"é","b":[1,2.5,null,true]}'
    assert back == {"a": "é", "b": [1, 2.5, None, True]}
    assert dumps({"b": 1, "a": 2}) == dumps({"a": 2, "b": 1})


def test_what_json_cannot_hold_reads_back_as_json_does():
    text, back = dumps_back({"pair": (1, 2), "price": Decimal("0.10")})
    assert back == {"pair": [1, 2], "price": "0.10"}
    assert text == '{"pair":[1,2],"price":"0.10"}'


@pytest.mark.parametrize("value, path", [
    ({"outer": {"inner": [1, {2: "two"}]}}, "$.outer.inner[1]"),
    ({1: "one"}, "$"),
    ({"a": [0.5, float("nan")]}, "$.a[1]"),
    ([float("-inf")], "$[0]"),
])
def test_a_refusal_names_where_the_value_is_wrong(value, path):
    with pytest.raises(InvalidPayload) as info:
        dumps_back(value, what="result")
    assert info.value.code == "invalid_payload"
    assert path in str(info.value)


def test_cycles_depth_size_and_text_are_refused_clearly():
    loop: dict = {}
    loop["self"] = loop
    deep: list = []
    cur = deep
    for _ in range(100_000):
        cur.append([])
        cur = cur[0]
    for value, words in ((loop, "nested too deeply"), (deep, "nested too deeply"),
                         ({"x": object()}, "not JSON-serialisable"),
                         ({"t": "ok \ud800"}, "lone surrogates"),
                         ({"t": "x" * 100}, "the limit is 50")):
        with pytest.raises(InvalidPayload, match=words):
            dumps_back(value, what="payload", limit=50)


def test_an_object_whose_equality_raises_is_walked_not_trusted():
    class Odd:
        def to_dict(self):
            return {"k": 1}

        def __eq__(self, other):
            raise ValueError("ambiguous")

    text, back = dumps_back({"odd": Odd()})
    assert text == '{"odd":{"k":1}}' and back == {"odd": {"k": 1}}


@pytest.mark.parametrize("value, path", [
    ("a\x00b", "$"),
    ({"k": ["x", "\x00"]}, "$.k[1]"),
    ({"k\x00": 1}, "$ (a key)"),
    ({"deep": {"er": "\x00"}}, "$.deep.er"),
])
def test_nul_is_refused_on_every_backend_alike_naming_where(value, path):
    """PostgreSQL's jsonb cannot hold NUL; SQLite could, but the same input gets one answer."""
    with pytest.raises(InvalidPayload, match="NUL") as info:
        dumps_back(value, what="payload")
    assert info.value.details["path"] == path


@pytest.mark.parametrize("text", ["\\u0000", "\\\\u0000", "a\\\\\\\\u0000b", "\\x00"])
def test_a_backslash_before_u0000_is_text_not_nul(text):
    assert dumps_back(text)[1] == text
