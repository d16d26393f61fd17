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

from dataclasses import dataclass

from fastapi import Depends, Request

from ..tokens import TokenInfo
from .problems import Problem

BEARER = {"WWW-Authenticate": 'Bearer realm="tether"'}


@dataclass(frozen=True)
class Principal:
    """Who is calling: a resolved token, or the insecure local operator."""

    token: TokenInfo | None

    @property
    def admin(self) -> bool:
        return self.token is None or self.token.admin

    @property
    def scope(self) -> tuple[str, ...] | None:
        """Projects this caller may see; ``None`` means every project."""
        return None if self.token is None else self.token.scope

    @property
    def name(self) -> str:
        if self.token is None:
            return "insecure-local"
        return self.token.name or self.token.id

    def allows(self, project: str) -> bool:
        return self.scope is None or project in self.scope

    def default_project(self, fallback: str) -> str | None:
        """The project a submission without one goes to, or ``None`` when it is ambiguous."""
        if self.scope is None:
            return fallback
        return self.scope[0] if len(self.scope) == 1 else None


def bearer_secret(header: str | None) -> str | None:
    """The token in an ``Authorization: Bearer ...`` header, or ``None``."""
    if not header:
        return None
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret or " " in secret:
        return None
    return secret


def resolve(store, header: str | None) -> TokenInfo:  # noqa: ANN001 - any Store with tokens
    """The live token named by an Authorization header, or a 401 ``Problem``."""
    secret = bearer_secret(header)
    if secret is None:
        raise Problem(401, "unauthorized", "send Authorization: Bearer <token> "
                      "(create one with `tether token create`)", headers=BEARER)
    try:
        info = store.resolve_token(secret)
    except UnicodeError:
        info = None
    if info is None or info.revoked_at is not None:
        raise Problem(401, "unauthorized", "the bearer token is unknown or revoked",
                      headers=BEARER)
    return info


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
