"""The query loader's fragments (``store/queries.py``): a ``-- fragment: x`` block is text that
statements share, never a statement itself; a ``-- include: x`` line stands for it, expanded
before comments are stripped; an unknown, repeated or self-including fragment is refused."""

import pytest

from tether.store.queries import expand_includes, fragments, load_queries

TEXT = """\
-- name: first
SELECT a,
-- include: cols
FROM t;

-- Columns both statements read.
-- fragment: cols
    b, c
-- The next statement's comment.
-- name: second
SELECT x,
    -- include: cols
FROM u;
"""


def load(tmp_path, text):
    path = tmp_path / "queries.sql"
    path.write_text(text)
    return load_queries(path)


def test_an_include_is_replaced_by_the_fragment_and_the_fragment_is_no_statement(tmp_path):
    queries = load(tmp_path, TEXT)
    assert sorted(queries) == ["first", "second"]
    assert queries["first"] == "SELECT a,\nb, c\nFROM t"
    assert queries["second"] == "SELECT x,\n    b, c\nFROM u"  # indented as the include


def test_a_fragment_ends_before_the_comments_heading_the_next_block():
    assert fragments(TEXT) == {"cols": "b, c"}


def test_an_include_of_an_unknown_fragment_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown fragment 'colz'"):
        load(tmp_path, TEXT.replace("-- include: cols\nFROM t", "-- include: colz\nFROM t"))


def test_a_fragment_defined_twice_is_refused(tmp_path):
    with pytest.raises(ValueError, match="fragment 'cols' is defined twice"):
        load(tmp_path, TEXT + "\n-- fragment: cols\nd\n")


def test_a_fragment_may_include_another():
    text = ("-- fragment: inner\nb\n-- fragment: outer\na,\n-- include: inner\n"
            "-- name: q\nSELECT\n-- include: outer\n")
    assert expand_includes(text).split("-- name: q\n")[1].split() == ["SELECT", "a,", "b"]


def test_a_fragment_including_itself_is_refused():
    text = ("-- fragment: a\n-- include: b\n-- fragment: b\n-- include: a\n"
            "-- name: q\nSELECT\n-- include: a\n")
    with pytest.raises(ValueError, match="includes itself"):
        expand_includes(text)


def test_text_without_fragments_is_loaded_as_before(tmp_path):
    assert load(tmp_path, "-- name: q\n-- a comment\nSELECT 1;\n") == {"q": "SELECT 1"}
