"""Who is calling a remote interface: bearer tokens resolved to a principal and its project scope.

A token is resolved through the store (only a hash is kept there). A missing, malformed, unknown
or revoked token is an ``unauthorized`` problem. A project token sees and acts on its own
projects only: the facade is called with ``projects=principal.scope``, so another project's job
answers ``job_not_found`` exactly like a job that does not exist. REST and MCP share this.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..submission import DEFAULT_PROJECT
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
    def id(self) -> str:
        """The token's id (what per-token limits count), or ``insecure-local``."""
        return "insecure-local" if self.token is None else self.token.id

    @property
    def token_id(self) -> str | None:
        """The token's id; ``None`` for the insecure local operator (nothing to revoke)."""
        return None if self.token is None else self.token.id

    @property
    def name(self) -> str:
        if self.token is None:
            return "insecure-local"
        return self.token.name or self.token.id

    def allows(self, project: str) -> bool:
        return self.scope is None or project in self.scope

    def write_project(self, project: str | None, *, where: str, verb: str = "write") -> str:
        """The project a write names, else this caller's default (``DEFAULT_PROJECT`` for
        an unrestricted caller): ``validation_error`` when a token of several projects names
        none (``where`` the request carries it: ``body``, ``arguments``), ``forbidden`` for a
        project outside the token."""
        if not project:
            if self.scope is None:
                project = DEFAULT_PROJECT
            elif len(self.scope) == 1:
                project = self.scope[0]
            else:
                raise Problem(422, "validation_error", "project: this token has several "
                              "projects; name one", errors=[{
                                  "field": "project", "in": where,
                                  "message": "required for a token with several projects"}])
        if not self.allows(project):
            raise Problem(403, "forbidden", f"this token may not {verb} project {project!r}")
        return project


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
