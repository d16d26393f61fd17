"""``open_store(url)``: the one place that knows both backends."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from ..optional import load
from .base import Store
from .sqlite.store import SQLiteStore
from .urls import redact

_PG_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def open_store(url: str, **options: Any) -> Store:
    """A store for ``url``: ``sqlite:///path`` (default) or ``postgresql://...``;
    ``options`` go to the backend's constructor, ``create=False`` among them to open an
    existing tether database only (``NoDatabase`` otherwise). PostgreSQL needs the
    ``postgres`` extra (``MissingExtra`` without it); psycopg is imported only by programs
    that use it. Anything else, a bare path included, is refused: a URL whose scheme is
    mistyped (``postgresql:/host/db``) must not become a file of that name."""
    if url.startswith("sqlite:"):
        return SQLiteStore(url, **options)
    if url.startswith(_PG_PREFIXES):
        backend = load("tether.store.postgres.store", extra="postgres",
                       what="a postgresql:// database URL")
        return backend.PostgresStore(url, **options)
    raise ConfigurationError(f"unsupported database URL {redact(url)!r}: use "
                             "sqlite:///path/to.db or postgresql://user@host/db")
