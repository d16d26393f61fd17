"""The REST API (FastAPI): ``create_app(tether_app)`` for embedding, ``serve(...)`` for
``tether serve``.

The names load on first use, so ``python -m tether.api`` without the ``server`` extra is one
``missing_extra`` error rather than an import failure inside FastAPI."""

from __future__ import annotations

from typing import Any

from ..optional import load

__all__ = ["API_PREFIX", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tether.api' has no attribute {name!r}")
    return getattr(load("tether.api.server", extra="server", what="the REST API"), name)
