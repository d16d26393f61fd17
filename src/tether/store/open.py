"""``open_store(url)``: the one place that knows both backends."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from ..optional import load
from .base import Store
from .sqlite.store import SQLiteStore

_PG_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def open_store(url: str, **options: Any) -> Store:
    """A store for ``url``: ``sqlite:///path`` (default) or ``postgresql://...``;
    ``options`` go to the backend's constructor. PostgreSQL needs the ``postgres`` extra
    (``MissingExtra`` without it); psycopg is imported only by programs that use it."""
    if url.startswith("sqlite:") or "://" not in url:
        return SQLiteStore(url, **options)
    if url.startswith(_PG_PREFIXES):
        backend = load("tether.store.postgres.store", extra="postgres",
                       what="a postgresql:// database URL")
        return backend.PostgresStore(url, **options)
    raise ConfigurationError(f"unsupported database URL {url!r}; use sqlite:/// or postgresql://")
