"""pydantic-ai agents inside tether jobs: every model request journaled and budgeted.

Attach ``Durable`` to a run (or an agent) inside a job::

    @app.job("research")
    async def research(ctx, payload):
        result = await agent.run(payload["question"], capabilities=[
            Durable(ctx, key="research", checkpoint_tools={"send_email"})])
        return result.output

``Durable`` is a pydantic-ai capability (its public extension point): it wraps whichever model
serves each request (``get_wrapper_model``) so the request is a ``ctx.acall`` (``agent_run.py``:
the key, the worst case reserved, the usage settled, the change policy on replay), and wraps
the execution of the tools it names (``wrap_tool_execute``) in a checkpoint. A replay after a
crash, a pause or a budget stop runs the agent from the top: recorded responses come back
from the journal at no cost, checkpointed tools return their recorded results, and the run
continues live from the first request that was never answered.

A streamed request (``agent.run_stream``, ``run_stream_events``) streams live from the
provider on the first run and is journaled once its stream has ended: the complete response
(its parts and usage) is what is recorded, never the partial chunks, so a request cut off by a
crash mid-stream is sent again on the replay. A replayed request reaches the stream at once,
as the recorded response's events. Structured output is the response's tool call or text like
any other, so it is journaled and replayed with it.

Needs the ``pydantic-ai`` extra (``pip install 'tether[pydantic-ai]'``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from .. import optional

try:
    import pydantic_core
    from pydantic import TypeAdapter
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
    from pydantic_ai.models import (
        CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse,
    )
    from pydantic_ai.models.wrapper import WrapperModel
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.tools import RunContext
except ModuleNotFoundError as exc:  # the extra is not installed
    raise optional.requires("pydantic-ai", "tether.integrations.pydantic_ai", exc) from exc

from ..core.usage import Usage
from ..job.context import JobContext
from .agent_run import DEFAULT_MAX_OUTPUT_TOKENS, AgentRun

__all__ = ["Durable", "JournaledModel", "usage_of"]

_PARAMETERS = TypeAdapter(ModelRequestParameters)


def usage_of(response: ModelResponse) -> Usage:
    """tether's usage of a pydantic-ai response. Both count cached reads and writes in the
    input (pydantic-ai prices by genai-prices, whose uncached input is the input less both);
    an input reported below them is taken as at least their sum."""
    u = response.usage
    cached = u.cache_read_tokens + u.cache_write_tokens
    return Usage(input_tokens=max(u.input_tokens, cached), output_tokens=u.output_tokens,
                 cached_input_tokens=u.cache_read_tokens,
                 reasoning_tokens=min(u.output_reasoning_tokens, u.output_tokens),
                 cache_write_tokens=u.cache_write_tokens,
                 cache_write_1h_tokens=min(u.cache_write_1h_tokens, u.cache_write_tokens))


def _dump_response(response: ModelResponse) -> Any:
    return ModelMessagesTypeAdapter.dump_python([response], mode="json")[0]


def _load_response(value: Any) -> ModelResponse:
    (response,) = ModelMessagesTypeAdapter.validate_python([value])
    assert isinstance(response, ModelResponse)
    return response


class JournaledModel(WrapperModel):
    """A model whose every request is a journaled, budgeted call of ``run``."""

    def __init__(self, wrapped: Model, run: AgentRun, *, provider: str | None = None,
                 model: str | None = None) -> None:
        super().__init__(wrapped)
        self._run = run
        self._priced_by = provider or wrapped.system
        self._priced_as = model or wrapped.model_name

    def _limited(self, settings: ModelSettings | None) -> tuple[ModelSettings, int]:
        """The settings the request is sent with (an output limit always set) and that limit."""
        merged: dict[str, Any] = {**(self.wrapped.settings or {}), **(settings or {})}
        limit = merged.get("max_tokens")
        if not isinstance(limit, int) or limit <= 0:
            limit = self._run.max_output_tokens
        sent: dict[str, Any] = {**(settings or {}), "max_tokens": limit}
        return ModelSettings(**sent), limit  # type: ignore[typeddict-item]

    def _asked(self, messages: list[ModelMessage], settings: ModelSettings,
               parameters: ModelRequestParameters) -> dict[str, Any]:
        return {"messages": ModelMessagesTypeAdapter.dump_python(messages, mode="json"),
                "parameters": _PARAMETERS.dump_python(parameters, mode="json"),
                "settings": pydantic_core.to_jsonable_python(settings, fallback=repr)}

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        settings, limit = self._limited(model_settings)

        async def send() -> tuple[Any, Usage]:
            response = await self.wrapped.request(messages, settings, model_request_parameters)
            return _dump_response(response), usage_of(response)

        value = await self._run.request(
            provider=self._priced_by, model=self._priced_as,
            request=self._asked(messages, settings, model_request_parameters),
            max_output_tokens=limit, send=send, context_window=self.wrapped.context_window)
        return _load_response(value)

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage],
                             model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: RunContext[Any] | None = None,
                             ) -> AsyncIterator[StreamedResponse]:
        """The live stream on the first run, journaled once it ends (read to its end if the
        consumer stopped early, so the whole response and its usage are recorded); the
        recorded response, replayed as its events, on a replay."""
        settings, limit = self._limited(model_settings)
        opened: asyncio.Future[StreamedResponse] = asyncio.get_running_loop().create_future()
        consumed = asyncio.Event()

        async def send() -> tuple[Any, Usage]:
            async with self.wrapped.request_stream(messages, settings, model_request_parameters,
                                                   run_context) as stream:
                opened.set_result(stream)
                await consumed.wait()
                async for _ in stream:
                    pass
                response = stream.get()
            return _dump_response(response), usage_of(response)

        call = asyncio.ensure_future(self._run.request(
            provider=self._priced_by, model=self._priced_as,
            request=self._asked(messages, settings, model_request_parameters),
            max_output_tokens=limit, send=send, context_window=self.wrapped.context_window))
        try:
            await asyncio.wait({call, opened}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        if not opened.done():  # answered from the journal, or failed before the stream opened
            yield CompletedStreamedResponse(_load_response(await call), replay_events=True,
                                            model_request_parameters=model_request_parameters)
            return
        try:
            yield opened.result()
        finally:
            consumed.set()
            await call


@dataclass
class Durable(AbstractCapability[Any]):
    """Run a pydantic-ai agent durably in the tether job ``ctx``.

    ``key`` names the run in the job (each run of a job needs its own); ``provider`` and
    ``model`` are what the price profile prices requests as (default: the serving model's
    ``system`` and ``model_name``); ``max_output_tokens`` is the output limit set on requests
    that set none; ``checkpoint_tools``: the names of the tools to checkpoint, or True for all;
    ``on_change``: the policy for a request a replay finds changed (``job/replay.py``)."""

    ctx: JobContext
    _: KW_ONLY
    key: str = "agent"
    provider: str | None = None
    model: str | None = None
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    checkpoint_tools: Collection[str] | bool = ()
    on_change: str | None = None
    _run: AgentRun = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._run = AgentRun(self.ctx, key=self.key, max_output_tokens=self.max_output_tokens,
                             checkpoint_tools=self.checkpoint_tools, on_change=self.on_change)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    @property
    def requests(self) -> int:
        """The model requests this run has made, replayed ones included."""
        return self._run.requests

    def get_wrapper_model(self, model: Model) -> Model | None:
        return JournaledModel(model, self._run, provider=self.provider, model=self.model)

    async def wrap_tool_execute(self, ctx: RunContext[Any], *, call: Any, tool_def: Any,
                                args: Any, handler: Any) -> Any:
        if not self._run.checkpoints(call.tool_name):
            return await handler(args)
        return await self._run.tool(call.tool_name, call.tool_call_id, lambda: handler(args))
