"""Tools whose input schemas forbid unknown arguments.

The SDK builds a tool's argument model from the function's signature and ignores arguments it
does not know. For tether that is a hazard: an agent that misspells ``idempotency_key`` as
``idempotencyKey`` would get a second job (and a second bill) on retry. ``strict_tool``
rebuilds the argument model with ``extra="forbid"``, so the published schema says
``additionalProperties: false`` and a call naming an unknown argument is refused before the
tool runs. The output schema comes from the function's return annotation (a pydantic model).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict


def strict_tool(fn: Callable[..., Any], name: str, description: str, *,
                read_only: bool = False, idempotent: bool = False,
                destructive: bool = False) -> Tool:
    """A ``Tool`` for ``fn`` that refuses arguments its signature does not name."""
    tool = Tool.from_function(
        fn, name=name, description=description, structured_output=True,
        annotations=ToolAnnotations(read_only_hint=read_only,
                                    idempotent_hint=read_only or idempotent,
                                    destructive_hint=destructive, open_world_hint=False))
    loose = tool.fn_metadata.arg_model
    strict: type[BaseModel] = type(loose.__name__, (loose,), {
        "model_config": ConfigDict(extra="forbid"), "__module__": loose.__module__})
    metadata = tool.fn_metadata.model_copy(update={"arg_model": strict})
    return tool.model_copy(update={"fn_metadata": metadata,
                                   "parameters": strict.model_json_schema(by_alias=True)})
