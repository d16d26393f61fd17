"""``open_store(url)``: the one place that knows both backends."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from .base import Store
from .sqlite.store import SQLiteStore

_PG_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def open_store(url: str, **options: Any) -> Store:
    """A store for ``url``: ``sqlite:///path`` (default) or ``postgresql://...``;
    ``options`` go to the backend's constructor."""
    if url.startswith("sqlite:") or "://" not in url:
        return SQLiteStore(url, **options)
    if url.startswith(_PG_PREFIXES):
        try:  # psycopg is loaded only by programs that use PostgreSQL
            from .postgres.store import PostgresStore
        except ImportError as exc:  # pragma: no cover - the backend ships with tether
            raise ConfigurationError(f"PostgreSQL backend unavailable: {exc}") from exc
        return PostgresStore(url, **options)
    raise ConfigurationError(f"unsupported database URL {url!r}; use sqlite:/// or postgresql://")
