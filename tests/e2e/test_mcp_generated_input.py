"""Every MCP tool against input generated from its own published schema, valid and invalid, on
both backends: no call ends in ``internal_error``, and every refusal carries a stable code and
a 4xx status (what REST gets from schemathesis in test_api_schemathesis.py).

schemathesis generates from OpenAPI, so each tool becomes a POST operation whose JSON body is
the tool's input schema; the tools are called in-process (the SDK's stdio transport is covered
by test_mcp_stdio.py and test_mcp_arguments.py).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from tether import Tether
from tether.mcp.server import build_server
from tether.wire.principal import Principal
from tests.e2e.api_harness import BACKENDS, backend_url

EXAMPLES = int(os.environ.get("TETHER_SCHEMATHESIS_EXAMPLES", "8"))


def _tools(app: Tether) -> tuple[Any, list]:
    server = build_server(app, lambda ctx: Principal(None))
    return server, asyncio.run(server.list_tools())


def _as_openapi(tools: list) -> dict:
    """One POST operation per tool, its body the tool's input schema ($defs moved into
    components, each under its tool's name)."""
    paths, components = {}, {}
    for tool in tools:
        text = json.dumps(tool.input_schema)
        schema = json.loads(text.replace('"#/$defs/', f'"#/components/schemas/{tool.name}__'))
        for name, definition in schema.pop("$defs", {}).items():
            components[f"{tool.name}__{name}"] = definition
        paths[f"/{tool.name}"] = {"post": {
            "requestBody": {"required": True,
                            "content": {"application/json": {"schema": schema}}},
            "responses": {"200": {"description": "the tool's answer"}}}}
    return {"openapi": "3.1.0", "info": {"title": "tether MCP tools", "version": "1"},
            "paths": paths, "components": {"schemas": components}}


def _tool_names() -> list[str]:
    app = Tether("sqlite:///:memory:")
    try:
        return [t.name for t in _tools(app)[1]]
    finally:
        app.close()


TOOL_NAMES = _tool_names()


@pytest.fixture(scope="module", params=BACKENDS)
def served(request, tmp_path_factory):
    app = Tether(backend_url(request.param, tmp_path_factory.mktemp("mcp-generated")),
                 public_url="https://tether.example")  # callback links need one
    app.register("echo", lambda ctx, payload: payload)
    for i in range(3):  # jobs for reads, control actions and forks to hit
        app.submit("echo", {"i": i})
    server, tools = _tools(app)
    operations = {op.path.strip("/"): op for op in (
        r.ok() for r in schemathesis.openapi.from_dict(_as_openapi(tools)).get_all_operations())}
    yield server, operations
    app.close()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                         ids=["valid", "invalid"])
@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_generated_input_gets_an_answer_or_a_stable_client_error(served, tool, mode):
    server, operations = served
    loop = asyncio.new_event_loop()

    @given(case=operations[tool].as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def check(case):
        arguments = case.body if isinstance(case.body, dict) else {"": case.body}
        result = loop.run_until_complete(server.call_tool(tool, arguments))
        if not result.is_error:
            return
        problem = result.structured_content or {}
        assert problem.get("code") not in (None, "internal_error"), (arguments, problem)
        assert 400 <= problem["status"] < 500, (arguments, problem)

    try:
        check()
    finally:
        loop.close()
