"""API tokens: bearer secrets scoped to projects (or admin). Only a SHA-256 of a token is stored;
the secret itself is shown once, at creation."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

PREFIX = "tth_"


@dataclass(frozen=True)
class TokenInfo:
    id: str
    name: str | None
    projects: tuple[str, ...]
    admin: bool
    created_at: datetime
    revoked_at: datetime | None = None

    def allows(self, project: str) -> bool:
        return self.admin or project in self.projects

    @property
    def scope(self) -> tuple[str, ...] | None:
        """Projects this token may see; ``None`` means all (admin)."""
        return None if self.admin else self.projects

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "projects": list(self.projects),
                "admin": self.admin, "created_at": self.created_at.isoformat(),
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


def new_secret() -> tuple[str, str, str]:
    """(token id, raw secret, hash). The raw secret embeds the id for easy revocation."""
    token_id = secrets.token_hex(6)
    raw = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    return token_id, raw, hash_secret(raw)


def hash_secret(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()
