"""The MCP server: tether's job tools for LLM agents (stdio or streamable HTTP).

The names load on first use, so ``python -m tether.mcp`` without the ``mcp`` extra is one
``missing_extra`` error rather than an import failure inside the SDK."""

from __future__ import annotations

from typing import Any

from ..optional import load

__all__ = ["build_server", "http_app", "run"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tether.mcp' has no attribute {name!r}")
    return getattr(load("tether.mcp.server", extra="mcp", what="the MCP server"), name)
