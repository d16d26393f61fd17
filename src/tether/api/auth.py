"""Bearer-token authentication and project scoping.

Every ``/api/v1`` route depends on ``principal``: ``Authorization: Bearer <token>`` is resolved
through the store (only a hash is kept there). A missing, malformed, unknown or revoked token is
a 401. A project token sees and acts on its own projects only: the facade is called with
``projects=principal.scope``, so another project's job answers 404 exactly like a job that does
not exist. Admin routes depend on ``admin`` and answer 403 to project tokens.

With ``create_app(auth=False)`` (``tether serve --insecure-no-auth``) every request is an
unrestricted admin: for a laptop, never for a network.
"""

from __future__ import annotations

from fastapi import Depends, Request

from ..wire.principal import Principal, resolve
from ..wire.problems import Problem


def principal(request: Request) -> Principal:
    """FastAPI dependency: the caller of this request (401 when unauthenticated)."""
    state = request.app.state
    if not state.auth:
        return Principal(None)
    return Principal(resolve(state.tether.store, request.headers.get("authorization")))


def admin(who: Principal = Depends(principal)) -> Principal:
    """FastAPI dependency for operator routes: 403 unless the token is an admin token."""
    if not who.admin:
        raise Problem(403, "forbidden", "this route needs an admin token")
    return who
