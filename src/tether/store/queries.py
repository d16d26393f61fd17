"""Named SQL: each backend keeps its statements in one ``queries.sql``, ``-- name: x`` per block."""

from __future__ import annotations

import re
from operator import itemgetter
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def load_queries(path: Path) -> dict[str, str]:
    text = path.read_text()
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
