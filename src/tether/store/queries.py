"""Named SQL: each backend keeps its statements in a ``queries/`` folder, one ``<concept>.sql``
per store module that runs them, ``-- name: x`` per block.

A block headed ``-- fragment: x`` is no statement: it is text that statements share, and a line
``-- include: x`` in a statement (or in another fragment) stands for it, expanded over the whole
folder's text before comments are stripped (``expand_includes``)."""

from __future__ import annotations

import re
from operator import itemgetter
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_BLOCK = re.compile(r"^--\s*(name|fragment):\s*(\w+)\s*$", re.MULTILINE)
_INCLUDE = re.compile(r"^([ \t]*)--\s*include:\s*(\w+)\s*$", re.MULTILINE)

_DEFINED = re.compile(r"^--\s*(?:name|fragment):\s*(\w+)\s*$", re.MULTILINE)


def gather(folder: Path) -> str:
    """The text of every ``*.sql`` in ``folder``, in name order, one after another. A name
    (a query's or a fragment's) defined twice is refused with both files named: which of
    two files wins must never depend on the order they are read in."""
    seen: dict[str, str] = {}
    texts = []
    for path in sorted(folder.glob("*.sql")):
        text = path.read_text()
        for name in _DEFINED.findall(text):
            if name in seen:
                raise ValueError(f"{folder}: {name!r} is defined in both {seen[name]} and "
                                 f"{path.name}")
            seen[name] = path.name
        texts.append(text)
    return "\n".join(texts)


def fragments(text: str, source: object = "") -> dict[str, str]:
    """The ``-- fragment: x`` blocks of ``text`` by name, each up to the next block."""
    parts = _BLOCK.split(text)
    found: dict[str, str] = {}
    for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if kind == "fragment":
            if name in found:
                raise ValueError(f"{source}: fragment {name!r} is defined twice")
            lines = body.strip().splitlines()
            while (lines and lines[-1].lstrip().startswith("--")
                   and not _INCLUDE.match(lines[-1])):
                lines.pop()  # the comments heading the next block
            found[name] = "\n".join(lines).rstrip().rstrip(";")
    return found


def expand_includes(text: str, source: object = "") -> str:
    """``text`` with its fragment blocks removed and every ``-- include: x`` line replaced by
    fragment ``x`` (indented as the line was; a fragment may include others, never itself)."""
    found = fragments(text, source)

    def expand(body: str, chain: tuple[str, ...]) -> str:
        def one(m: re.Match[str]) -> str:
            indent, name = m.group(1), m.group(2)
            if name not in found:
                raise ValueError(f"{source}: include of unknown fragment {name!r}")
            if name in chain:
                raise ValueError(f"{source}: fragment {name!r} includes itself")
            inner = expand(found[name], (*chain, name))
            return "\n".join(indent + ln if ln else ln for ln in inner.splitlines())
        return _INCLUDE.sub(one, body)

    parts = _BLOCK.split(text)
    out = [expand(parts[0], ())]
    for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if kind == "name":
            out.append(f"-- name: {name}\n" + expand(body, ()))
    return "\n".join(out)


def load_queries(path: Path) -> dict[str, str]:
    """The named statements of a backend's ``queries/`` folder (or of one ``.sql`` file)."""
    text = expand_includes(gather(path) if path.is_dir() else path.read_text(), path)
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [ln for ln in body.strip().splitlines() if not ln.lstrip().startswith("--")]
        sql = "\n".join(lines).strip().rstrip(";")
        if name in queries:
            raise ValueError(f"{path}: query {name!r} is defined twice")
        queries[name] = sql
    return queries


_PARAM = re.compile(r"'(?:[^']|'')*'|--[^\n]*|(?<![:\w]):([A-Za-z_]\w*)")


def positional(sql: str) -> tuple[str, Callable[[Mapping[str, Any]], tuple]]:
    """``sql`` with each distinct ``:name`` numbered (``?1``, ``?2`` ...), and the function
    that turns a parameter dict into the matching tuple. sqlite3 binds a tuple in C but a
    dict by looking every name up through Python, a large part of a batched write's cost."""
    names: dict[str, int] = {}

    def number(m: re.Match[str]) -> str:
        if m.group(1) is None:  # a string literal or a comment
            return m.group(0)
        return f"?{names.setdefault(m.group(1), len(names) + 1)}"

    text = _PARAM.sub(number, sql)
    order = tuple(names)
    if not order:
        return text, lambda params: ()
    if len(order) == 1:
        only = order[0]
        return text, lambda params: (params[only],)
    return text, itemgetter(*order)
