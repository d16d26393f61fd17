"""OpenAI Agents SDK agents inside tether jobs: every model request journaled and budgeted.

Run an agent through ``Durable`` inside a job::

    @app.job("research")
    async def research(ctx, payload):
        durable = Durable(ctx, key="research", checkpoint_tools={"send_email"})
        result = await durable.run(agent, payload["question"])
        return result.final_output

``Durable`` uses the SDK's model hook: it wraps the agent's ``Model`` (or, for a model named
by a string, the run's ``ModelProvider``) so each request is a ``ctx.acall`` (``agent_run.py``:
the key, the worst case reserved, the usage settled, the change policy on replay), and it
wraps the ``on_invoke_tool`` of the function tools it names in a checkpoint. A replay after a
crash, a pause or a budget stop runs the agent from the top: recorded responses come back
from the journal at no cost, checkpointed tools return their recorded results, and the run
continues live from the first request that was never answered.

A streamed run (``Runner.run_streamed``) asks the provider for each response as one request
and journals it whole (its output items and usage); the stream gets each response as one
``response.completed`` event, on the first run as on a replay, and the SDK's item events
(tool called, message output) as usual. Structured output (``output_type``) is the response's
message like any other, so it is journaled and replayed with it.

Only the agent given to ``run`` (or ``agent``) is wrapped: an agent reached by a handoff runs
with its own model, unjournaled, unless it was wrapped too.

Needs the ``openai-agents`` extra (``pip install 'tether[openai-agents]'``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Collection
from typing import Any

from .. import optional

try:
    import pydantic_core
    from agents import (
        Agent, FunctionTool, Model, ModelProvider, ModelResponse, ModelSettings, ModelTracing,
        OpenAIProvider, RunConfig, Runner, RunResult, Usage,
    )
    from agents.items import TResponseOutputItem, TResponseStreamEvent
    from openai.types.responses import Response, ResponseCompletedEvent, ResponseUsage
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
    from pydantic import TypeAdapter
except ModuleNotFoundError as exc:  # the extra is not installed
    raise optional.requires("openai-agents", "tether.integrations.openai_agents", exc) from exc

from ..core.usage import Usage as TetherUsage
from ..job.context import JobContext
from .agent_run import DEFAULT_MAX_OUTPUT_TOKENS, AgentRun

__all__ = ["Durable", "JournaledModel", "JournaledProvider"]

_OUTPUT = TypeAdapter(list[TResponseOutputItem])


def _usage_json(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "input_details": usage.input_tokens_details.model_dump(mode="json"),
            "output_details": usage.output_tokens_details.model_dump(mode="json")}


def _tether_usage(u: dict[str, Any]) -> TetherUsage:
    tin = u["input_tokens"]
    cached = min(u["input_details"].get("cached_tokens") or 0, tin)
    return TetherUsage(input_tokens=tin, output_tokens=u["output_tokens"],
                       cached_input_tokens=cached,
                       cache_write_tokens=min(u["input_details"].get("cache_write_tokens") or 0,
                                              tin - cached),
                       reasoning_tokens=u["output_details"].get("reasoning_tokens") or 0)


def _response_of(value: dict[str, Any]) -> ModelResponse:
    """The SDK's response from its journaled JSON."""
    u = value["usage"]
    usage = Usage(requests=1, input_tokens=u["input_tokens"], output_tokens=u["output_tokens"],
                  input_tokens_details=InputTokensDetails.model_validate(u["input_details"]),
                  output_tokens_details=OutputTokensDetails.model_validate(u["output_details"]),
                  total_tokens=u["input_tokens"] + u["output_tokens"])
    return ModelResponse(output=_OUTPUT.validate_python(value["output"]), usage=usage,
                         response_id=value.get("response_id"))


def _tool_json(tool: Any) -> Any:
    if isinstance(tool, FunctionTool):
        return {"name": tool.name, "description": tool.description,
                "parameters": tool.params_json_schema, "strict": tool.strict_json_schema}
    return {"name": getattr(tool, "name", type(tool).__name__), "type": type(tool).__name__}


class JournaledModel(Model):
    """An Agents SDK model whose every request is a journaled, budgeted call of ``run``."""

    def __init__(self, wrapped: Model, run: AgentRun, *, provider: str, model: str) -> None:
        self.wrapped, self._run, self._provider, self._model = wrapped, run, provider, model

    async def close(self) -> None:
        await self.wrapped.close()

    async def get_response(self, system_instructions: str | None, input: Any,
                           model_settings: ModelSettings, tools: list[Any],
                           output_schema: Any, handoffs: list[Any], tracing: ModelTracing,
                           *, previous_response_id: str | None = None,
                           conversation_id: str | None = None, prompt: Any = None,
                           ) -> ModelResponse:
        limit = model_settings.max_tokens
        if not isinstance(limit, int) or limit <= 0:
            limit = self._run.max_output_tokens
        settings = dataclasses.replace(model_settings, max_tokens=limit)
        asked = {
            "system": system_instructions,
            "input": pydantic_core.to_jsonable_python(input, fallback=repr),
            "settings": settings.to_json_dict(),
            "tools": [_tool_json(t) for t in tools],
            "output": (None if output_schema is None or output_schema.is_plain_text()
                       else output_schema.json_schema()),
            "handoffs": [h.tool_name for h in handoffs],
            "previous_response_id": previous_response_id, "conversation_id": conversation_id,
            "prompt": pydantic_core.to_jsonable_python(prompt, fallback=repr)}

        async def send() -> tuple[Any, TetherUsage]:
            response = await self.wrapped.get_response(
                system_instructions, input, settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id,
                prompt=prompt)
            usage = _usage_json(response.usage)
            value = {"output": [item.model_dump(mode="json") for item in response.output],
                     "usage": usage, "response_id": response.response_id}
            return value, _tether_usage(usage)

        value = await self._run.request(provider=self._provider, model=self._model,
                                        request=asked, max_output_tokens=limit, send=send)
        return _response_of(value)

    async def stream_response(self, system_instructions: str | None, input: Any,
                              model_settings: ModelSettings, tools: list[Any],
                              output_schema: Any, handoffs: list[Any], tracing: ModelTracing,
                              *, previous_response_id: str | None = None,
                              conversation_id: str | None = None, prompt: Any = None,
                              ) -> AsyncIterator[TResponseStreamEvent]:
        response = await self.get_response(
            system_instructions, input, model_settings, tools, output_schema, handoffs,
            tracing, previous_response_id=previous_response_id,
            conversation_id=conversation_id, prompt=prompt)
        u = response.usage
        done = Response(
            id=response.response_id or "tether", created_at=0, model=self._model,
            object="response", output=response.output, parallel_tool_calls=False,
            tool_choice="auto", tools=[], status="completed",
            usage=ResponseUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                                total_tokens=u.total_tokens,
                                input_tokens_details=u.input_tokens_details,
                                output_tokens_details=u.output_tokens_details))
        yield ResponseCompletedEvent(response=done, type="response.completed", sequence_number=0)


class JournaledProvider(ModelProvider):
    """A ``ModelProvider`` whose models are ``JournaledModel``s of ``run``."""

    def __init__(self, inner: ModelProvider, run: AgentRun, *, provider: str) -> None:
        self._inner, self._run, self._provider = inner, run, provider

    def get_model(self, model_name: str | None) -> Model:
        model = self._inner.get_model(model_name)
        return JournaledModel(model, self._run, provider=self._provider,
                              model=_name_of(model, model_name))

    async def aclose(self) -> None:
        await self._inner.aclose()


def _name_of(model: Any, name: str | None) -> str:
    found = getattr(model, "model", None)
    return found if isinstance(found, str) else (name or "unknown")


class Durable:
    """Run an Agents SDK agent durably in the tether job ``ctx``.

    ``key`` names the run in the job (each run of a job needs its own); ``provider`` is what
    the price profile prices requests as (``openai``) and ``model`` the model, when it cannot
    be read from the SDK's model; ``max_output_tokens`` is the output limit set on requests
    that set none; ``checkpoint_tools``: the names of the function tools to checkpoint, or
    True for all; ``on_change``: the policy for a request a replay finds changed."""

    def __init__(self, ctx: JobContext, *, key: str = "agent", provider: str = "openai",
                 model: str | None = None,
                 max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
                 checkpoint_tools: Collection[str] | bool = (),
                 on_change: str | None = None) -> None:
        self._run = AgentRun(ctx, key=key, max_output_tokens=max_output_tokens,
                             checkpoint_tools=checkpoint_tools, on_change=on_change)
        self._provider, self._model = provider, model

    @property
    def requests(self) -> int:
        """The model requests this run has made, replayed ones included."""
        return self._run.requests

    def model(self, model: Model, name: str | None = None) -> JournaledModel:
        """``model`` with every request journaled and budgeted."""
        return JournaledModel(model, self._run, provider=self._provider,
                              model=self._model or _name_of(model, name))

    def model_provider(self, inner: ModelProvider | None = None) -> JournaledProvider:
        """``inner`` (default: the SDK's ``OpenAIProvider``) with its models journaled."""
        return JournaledProvider(inner or OpenAIProvider(), self._run, provider=self._provider)

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of ``agent`` whose model (when it is a ``Model``) is journaled and whose
        named function tools are checkpointed."""
        changes: dict[str, Any] = {"tools": [self._tool(t) for t in agent.tools]}
        if isinstance(agent.model, Model):
            changes["model"] = self.model(agent.model)
        return agent.clone(**changes)

    def _tool(self, tool: Any) -> Any:
        if not isinstance(tool, FunctionTool) or not self._run.checkpoints(tool.name):
            return tool
        invoke = tool.on_invoke_tool

        async def checkpointed(tool_ctx: Any, arguments: str) -> Any:
            return await self._run.tool(tool.name, tool_ctx.tool_call_id,
                                        lambda: invoke(tool_ctx, arguments))
        return dataclasses.replace(tool, on_invoke_tool=checkpointed)

    def run_config(self, config: RunConfig | None = None) -> RunConfig:
        """``config`` (default: a new one) with its model provider journaled."""
        config = config or RunConfig()
        return dataclasses.replace(config, model_provider=self.model_provider(
            config.model_provider))

    async def run(self, agent: Agent[Any], input: Any, *, run_config: RunConfig | None = None,
                  **kwargs: Any) -> RunResult:
        """``Runner.run`` of ``agent`` with its requests journaled and tools checkpointed."""
        return await Runner.run(self.agent(agent), input,
                                run_config=self.run_config(run_config), **kwargs)
