"""Unknown query parameters are refused (422 ``validation_error`` naming each), not ignored.

``GET /jobs?stat=failed`` would otherwise list every job as if no filter had been asked for,
and a client would never learn about its typo. Each route accepts the query parameters it
declares, those of its dependencies included.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from ..wire.problems import Problem

_ALLOWED: dict[int, frozenset[str]] = {}


def _names(dependant: Any) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _names(sub)
    return names


def _allowed(route: Any) -> frozenset[str]:
    key = id(route)
    if key not in _ALLOWED:
        _ALLOWED[key] = frozenset(_names(route.dependant))
    return _ALLOWED[key]


def known_query(request: Request) -> None:
    """Router dependency: 422 when the query string names a parameter the route lacks."""
    route = request.scope.get("route")
    if route is None or not request.query_params:
        return
    unknown = sorted(set(request.query_params) - _allowed(route))
    if unknown:
        raise Problem(422, "validation_error",
                      f"{unknown[0] or '(empty name)'}: unknown query parameter",
                      errors=[{"field": name or "(empty name)", "in": "query",
                               "message": "unknown query parameter"} for name in unknown])
