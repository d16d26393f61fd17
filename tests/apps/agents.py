"""Agent jobs for the integration tests, loaded in-process and by real worker processes: a
pydantic-ai agent and an Agents SDK agent, each with one checkpointed tool ``step``, both on
the provider server at ``TETHER_TEST_PROVIDER_URL`` (read when a
job runs). ``step`` appends its argument to the file ``TETHER_AGENT_EFFECTS`` (its side effect)
and, at the call ``TETHER_AGENT_KILL_AT`` names, SIGKILLs its own process once, before the
effect, leaving ``TETHER_AGENT_KILL_FLAG`` behind. ``INSTRUCTIONS`` is what a deploy would
change. Each framework is imported by the first job that uses it: a worker process pays
the import of the one its job needs (seconds each on a busy machine)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from typing import Any

from pydantic import BaseModel

from tether import Tether

app = Tether()
INSTRUCTIONS = "Take the steps, then report."
MODEL = "gpt-4o-mini"


class Report(BaseModel):
    steps: int
    summary: str


def _url() -> str:
    return os.environ.get("TETHER_TEST_PROVIDER_URL", "http://127.0.0.1:9") + "/v1"


def step(n: int) -> str:
    """Take step ``n`` (a side effect)."""
    flag = os.environ.get("TETHER_AGENT_KILL_FLAG")
    if (flag and os.environ.get("TETHER_AGENT_KILL_AT") == str(n)
            and not Path(flag).exists()):
        Path(flag).write_text(str(n))
        os.kill(os.getpid(), signal.SIGKILL)
    effects = os.environ.get("TETHER_AGENT_EFFECTS")
    if effects:
        with open(effects, "a") as f:
            f.write(f"{n}\n")
    return f"step {n} taken"


def _pydantic_agent(window: int | None = None) -> Any:
    """The pydantic-ai agent; ``window``: the context window its model's profile states."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=_client()))
    if window is not None:
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=_client()),
                                profile={**model.profile, "context_window": window})
    agent = Agent(model, instructions=INSTRUCTIONS, output_type=Report, retries=0)
    agent.tool_plain(step)
    return agent


def _client() -> Any:
    from openai import AsyncOpenAI
    return AsyncOpenAI(base_url=_url(), api_key="sk-test", max_retries=0)


def _sdk_agent(named: bool = False, responses: bool = False) -> Any:
    """The Agents SDK agent, its model an SDK ``Model`` (chat completions, or the
    ``responses`` API) or (``named``) a string the run's model provider resolves."""
    from agents import Agent as SdkAgent
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel, function_tool
    kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
    return SdkAgent(name="stepper", instructions=INSTRUCTIONS, output_type=Report,
                    tools=[function_tool(step)],
                    model=MODEL if named else kind(MODEL, _client()))


def _in_flight(ctx) -> int:
    """1 while a model request is reserved and not yet settled: an event that arrives then
    came from the live stream, not from the journal."""
    return int(any(e.status == "reserved" for e in ctx.store.journal(ctx.id)))


@app.job("pydantic_agent", max_attempts=3)
async def pydantic_agent(ctx, payload):
    from tether.integrations import pydantic_ai
    durable = pydantic_ai.Durable(ctx, key="steps", checkpoint_tools={"step"},
                                  max_output_tokens=500)
    agent = _pydantic_agent(payload.get("window"))
    if payload.get("stream"):
        live = 0
        async with agent.run_stream(payload["prompt"], capabilities=[durable]) as run:
            async for _ in run.stream_output(debounce_by=None):
                live += _in_flight(ctx)
            output = await run.get_output()
        return {**output.model_dump(), "requests": durable.requests, "live": live > 0}
    output = (await agent.run(payload["prompt"], capabilities=[durable])).output
    return {**output.model_dump(), "requests": durable.requests}


@app.job("pydantic_agent_sync", max_attempts=3)
def pydantic_agent_sync(ctx, payload):
    """The same agent from a plain ``def`` job, through ``run_sync``."""
    from tether.integrations import pydantic_ai
    durable = pydantic_ai.Durable(ctx, key="steps", checkpoint_tools={"step"},
                                  max_output_tokens=500)
    output = _pydantic_agent().run_sync(payload["prompt"], capabilities=[durable]).output
    return {**output.model_dump(), "requests": durable.requests}


@app.job("sdk_agent", max_attempts=3)
async def sdk_agent(ctx, payload):
    from agents import Runner, set_tracing_disabled

    from tether.integrations import openai_agents
    set_tracing_disabled(True)  # its exporter would post traces to the real API
    durable = openai_agents.Durable(ctx, key="steps", checkpoint_tools={"step"},
                                    max_output_tokens=500)
    if payload.get("stream"):
        live = 0
        run = Runner.run_streamed(durable.agent(_sdk_agent()), payload["prompt"],
                                  run_config=durable.run_config())
        async for event in run.stream_events():
            live += event.type == "raw_response_event" and _in_flight(ctx)
        return {**run.final_output.model_dump(), "requests": durable.requests,
                "live": live > 0}
    if payload.get("named") or payload.get("run_config"):
        from agents import OpenAIChatCompletionsModel, OpenAIProvider, RunConfig
        config = (RunConfig(model=OpenAIChatCompletionsModel(MODEL, _client()))
                  if payload.get("run_config") else
                  RunConfig(model_provider=OpenAIProvider(openai_client=_client(),
                                                          use_responses=False)))
        result = await durable.run(_sdk_agent(named=True), payload["prompt"],
                                   run_config=config)
    else:
        result = await durable.run(_sdk_agent(responses=payload.get("responses", False)),
                                   payload["prompt"])
    return {**result.final_output.model_dump(), "requests": durable.requests}
