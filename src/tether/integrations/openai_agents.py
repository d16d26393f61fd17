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

A streamed run (``Runner.run_streamed``) streams each request live from the provider on the
first run and journals it once its ``response.completed`` event has arrived: the complete
response (its output items and usage) is what is recorded, never the partial events, so a
request cut off by a crash mid-stream is sent again on the replay. The ``response.completed``
event the stream gets is rebuilt from the journal, on the first run as on a replay (where it
is the only event of the request); the SDK's item events (tool called, message output)
follow as usual. Structured output (``output_type``) is the response's
message like any other, so it is journaled and replayed with it.

Only the agent given to ``run`` (or ``agent``) is wrapped: an agent reached by a handoff runs
with its own model, unjournaled, unless it was wrapped too.

Needs the ``openai-agents`` extra (``pip install 'tether[openai-agents]'``).
"""

from __future__ import annotations

import asyncio
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
from ..errors import ProviderError
from ..job.context import JobContext
from .agent_run import DEFAULT_MAX_OUTPUT_TOKENS, AgentRun

__all__ = ["Durable", "JournaledModel", "JournaledProvider"]

_OUTPUT = TypeAdapter(list[TResponseOutputItem])


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


def _journaled(output: list[Any], input_tokens: int, output_tokens: int, input_details: Any,
               output_details: Any, response_id: str | None) -> tuple[Any, TetherUsage]:
    """A response as the journal keeps it (its output items, usage and id), and its usage."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens,
             "input_details": input_details.model_dump(mode="json"),
             "output_details": output_details.model_dump(mode="json")}
    return ({"output": [item.model_dump(mode="json") for item in output], "usage": usage,
             "response_id": response_id}, _tether_usage(usage))


def _completed(response: ModelResponse, model: str) -> ResponseCompletedEvent:
    """The ``response.completed`` event that carries ``response`` whole."""
    u = response.usage
    done = Response(
        id=response.response_id or "tether", created_at=0, model=model, object="response",
        output=response.output, parallel_tool_calls=False, tool_choice="auto", tools=[],
        status="completed",
        usage=ResponseUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                            total_tokens=u.total_tokens,
                            input_tokens_details=u.input_tokens_details,
                            output_tokens_details=u.output_tokens_details))
    return ResponseCompletedEvent(response=done, type="response.completed", sequence_number=0)


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

    def _prepared(self, system_instructions: str | None, input: Any,
                  model_settings: ModelSettings, tools: list[Any], output_schema: Any,
                  handoffs: list[Any], previous_response_id: str | None,
                  conversation_id: str | None, prompt: Any,
                  ) -> tuple[ModelSettings, int, dict[str, Any]]:
        """The settings to send (an output limit and usage always asked for), that limit, and
        what the request asks."""
        limit = model_settings.max_tokens
        if not isinstance(limit, int) or limit <= 0:
            limit = self._run.max_output_tokens
        settings = dataclasses.replace(model_settings, max_tokens=limit, include_usage=True)
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
        return settings, limit, asked

    async def get_response(self, system_instructions: str | None, input: Any,
                           model_settings: ModelSettings, tools: list[Any],
                           output_schema: Any, handoffs: list[Any], tracing: ModelTracing,
                           *, previous_response_id: str | None = None,
                           conversation_id: str | None = None, prompt: Any = None,
                           ) -> ModelResponse:
        settings, limit, asked = self._prepared(
            system_instructions, input, model_settings, tools, output_schema, handoffs,
            previous_response_id, conversation_id, prompt)

        async def send() -> tuple[Any, TetherUsage]:
            response = await self.wrapped.get_response(
                system_instructions, input, settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id,
                prompt=prompt)
            return _journaled(response.output, response.usage.input_tokens,
                              response.usage.output_tokens, response.usage.input_tokens_details,
                              response.usage.output_tokens_details, response.response_id)

        value = await self._run.request(provider=self._provider, model=self._model,
                                        request=asked, max_output_tokens=limit, send=send)
        return _response_of(value)

    async def stream_response(self, system_instructions: str | None, input: Any,
                              model_settings: ModelSettings, tools: list[Any],
                              output_schema: Any, handoffs: list[Any], tracing: ModelTracing,
                              *, previous_response_id: str | None = None,
                              conversation_id: str | None = None, prompt: Any = None,
                              ) -> AsyncIterator[TResponseStreamEvent]:
        """The live events on the first run, the response journaled from the stream's
        ``response.completed`` event; that event itself is given as the journal gives the
        response back, on the first run as on a replay, so the next request is the same."""
        settings, limit, asked = self._prepared(
            system_instructions, input, model_settings, tools, output_schema, handoffs,
            previous_response_id, conversation_id, prompt)
        events: asyncio.Queue[Any] = asyncio.Queue()

        async def send() -> tuple[Any, TetherUsage]:
            completed: Response | None = None
            async for event in self.wrapped.stream_response(
                    system_instructions, input, settings, tools, output_schema, handoffs,
                    tracing, previous_response_id=previous_response_id,
                    conversation_id=conversation_id, prompt=prompt):
                if isinstance(event, ResponseCompletedEvent):
                    completed = event.response  # given as the journal gives it back, below
                else:
                    await events.put(event)
            if completed is None or completed.usage is None:
                raise ProviderError("a streamed response ended without its usage")
            u = completed.usage
            return _journaled(completed.output, u.input_tokens, u.output_tokens,
                              u.input_tokens_details, u.output_tokens_details, completed.id)

        call = asyncio.ensure_future(self._run.request(
            provider=self._provider, model=self._model, request=asked,
            max_output_tokens=limit, send=send))
        try:
            while not (call.done() and events.empty()):
                taking = asyncio.ensure_future(events.get())
                await asyncio.wait({taking, call}, return_when=asyncio.FIRST_COMPLETED)
                if taking.done():
                    yield taking.result()
                else:
                    taking.cancel()
            value = await call
        finally:
            call.cancel()
        yield _completed(_response_of(value), self._model)


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
        """``config`` (default: a new one) with its model provider journaled, and its model
        too when it is a ``Model`` (which overrides every agent's)."""
        config = config or RunConfig()
        changes: dict[str, Any] = {"model_provider": self.model_provider(config.model_provider)}
        if isinstance(config.model, Model):
            changes["model"] = self.model(config.model)
        return dataclasses.replace(config, **changes)

    async def run(self, agent: Agent[Any], input: Any, *, run_config: RunConfig | None = None,
                  **kwargs: Any) -> RunResult:
        """``Runner.run`` of ``agent`` with its requests journaled and tools checkpointed."""
        return await Runner.run(self.agent(agent), input,
                                run_config=self.run_config(run_config), **kwargs)
