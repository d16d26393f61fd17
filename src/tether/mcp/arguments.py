"""The argument types the MCP tools share, bounded as the REST API bounds them.

Bounds are checked by pydantic before a tool body runs, so an id past 2^63 - 1 (or below 1)
is a ``validation_error`` on every backend, never an ``OverflowError`` from a driver. Text is
not screened here: NUL characters and bad names are refused by the facade, with the same code
the library, the CLI and REST give.
"""

from __future__ import annotations

from typing import Annotated, Callable

from mcp.server.mcpserver import Context
from pydantic import Field, Strict

from ..wire.models import INT63
from ..wire.principal import Principal

PrincipalFor = Callable[[Context], Principal]
"""Names the caller of one tool call (the stdio token, or the HTTP request's bearer token)."""

JobId = Annotated[int, Field(ge=1, le=INT63, description="the job id (1 to 2^63-1)")]
Name = Annotated[str, Field(min_length=1, max_length=200)]
Flag = Annotated[bool, Strict()]

