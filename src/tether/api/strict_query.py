"""Unknown or repeated query parameters are refused (422 ``validation_error`` naming each).

``GET /jobs?stat=failed`` would otherwise list every job as if no filter had been asked for,
and ``?state=failed&state=queued`` would silently use the last value: a client would never
learn about its mistake. Each route accepts the query parameters it declares (those of its
dependencies included), each once: every query parameter of the API is a single value.
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
    query = request.query_params
    unknown = sorted(set(query) - _allowed(route))
    repeated = sorted(name for name in set(query) if len(query.getlist(name)) > 1)
    if repeated and not unknown:
        raise Problem(422, "validation_error", f"{repeated[0]}: given more than once",
                      errors=[{"field": name, "in": "query", "message": "given more than once"}
                              for name in repeated])
    if unknown:
        raise Problem(422, "validation_error",
                      f"{unknown[0] or '(empty name)'}: unknown query parameter",
                      errors=[{"field": name or "(empty name)", "in": "query",
                               "message": "unknown query parameter"} for name in unknown])
