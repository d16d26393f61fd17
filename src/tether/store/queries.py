"""Named SQL: each backend keeps its statements in a ``queries/`` folder, one ``<concept>.sql``
per store module that runs them, ``-- name: x`` per block."""

from __future__ import annotations

import re
from operator import itemgetter
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
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


def load_queries(path: Path) -> dict[str, str]:
    """The named statements of a backend's ``queries/`` folder (or of one ``.sql`` file)."""
    text = gather(path) if path.is_dir() else path.read_text()
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
