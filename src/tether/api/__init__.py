"""The REST API (FastAPI): ``create_app(tether_app)`` for embedding, ``serve(...)`` for ``tether serve``."""

from .server import API_PREFIX, create_app, serve

__all__ = ["API_PREFIX", "create_app", "serve"]
