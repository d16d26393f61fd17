"""The MCP server: tether's job tools for LLM agents (stdio or streamable HTTP)."""

from .server import build_server, http_app, run

__all__ = ["build_server", "http_app", "run"]
