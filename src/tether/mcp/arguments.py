"""The argument types the MCP tools share, bounded as the REST API bounds them.

Bounds are checked by pydantic before a tool body runs, so an id past 2^63 - 1 (or below 1)
is a ``validation_error`` on every backend, never an ``OverflowError`` from a driver. Text is
not screened here: NUL characters and bad names are refused by the facade, with the same code
the library, the CLI and REST give.
"""

from __future__ import annotations

from typing import Annotated, Any
from collections.abc import Callable

from mcp.server.mcpserver import Context
from pydantic import ConfigDict, Field, Strict

from ..wire.budgets import ProjectLimitsIn
from ..wire.models import BudgetLimits
from ..wire.numbers import INT63, JsonNumber
from ..wire.principal import Principal

PrincipalFor = Callable[[Context], Principal]
"""Names the caller of one tool call (the stdio token, or the HTTP request's bearer token)."""

JobId = Annotated[int, Field(ge=1, le=INT63, description="the job id (1 to 2^63-1)"),
                  JsonNumber]
Name = Annotated[str, Field(min_length=1, max_length=200)]
Flag = Annotated[bool, Strict()]


LIMITS = {
    "max_cost_usd": "USD, a decimal string or number",
    "max_calls": "provider calls",
    "max_input_tokens": "input tokens",
    "max_output_tokens": "output tokens",
    "max_duration_s": "seconds of running",
    "max_examples": "examples the job's stages produce",
}


def _describe(schema: dict[str, Any]) -> None:
    for name, prop in schema.get("properties", {}).items():
        prop.setdefault("description", LIMITS.get(name, name.replace("_", " ")))


class Limits(BudgetLimits):
    """Budget limits, each optional; any other name is refused. A call whose worst-case
    reservation would cross a limit is not made, and the job pauses with budget_exhausted."""

    model_config = ConfigDict(json_schema_extra=_describe)


class ProjectLimits(ProjectLimitsIn):
    """A project's limits, each optional; any other name is refused."""

    model_config = ConfigDict(json_schema_extra=_describe)
