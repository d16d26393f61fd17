"""A durable, budgeted agent: pydantic-ai inside a tether job.

The agent researches a topic with two tools: ``search`` (read-only, runs again on a replay)
and ``save_note`` (a side effect, checkpointed: it runs once however often the job replays).
``Durable`` makes every model request a journaled, budgeted ``ctx.acall``: the worst case is
reserved before the request is sent, the usage the response reports is settled, and a job that
resumes after a crash, a pause or a budget stop gets the recorded responses back instead of
paying again (docs/agents.md).

The model is the simulated provider behind pydantic-ai's ``FunctionModel`` (it answers at once,
for free, and keeps its own bill in ``agent-bill.jsonl``). Set ``TETHER_AGENT_BASE_URL`` to an
OpenAI-compatible server (``tests/provider_server.py`` is one) to run the same agent on
pydantic-ai's OpenAI model instead.

Run it:  python examples/agent.py   (needs ``pip install 'tether[pydantic-ai]'``)
Run it again: the same idempotency key returns the finished job and nothing is paid twice.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from tether import Budget, Tether
from tether.integrations.pydantic_ai import Durable
from tether.providers.simulated import SimulatedProvider

app = Tether()  # TETHER_DATABASE_URL, default sqlite:///./tether.db
llm = SimulatedProvider("agent-bill.jsonl")
NOTES: list[str] = []


def simulated(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that searches, saves a note, then answers; its words from the simulated
    provider, which bills each request."""
    done = [p.tool_name for m in messages for p in m.parts if p.part_kind == "tool-return"]
    prompt = str([p for m in messages for p in m.parts])
    reply = llm.complete(prompt, key=f"agent-{len(done)}", max_tokens=64)
    usage = RequestUsage(input_tokens=reply.usage.input_tokens,
                         output_tokens=reply.usage.output_tokens)
    if "search" not in done:
        part: Any = ToolCallPart("search", {"topic": "durable agents"}, tool_call_id="s1")
    elif "save_note" not in done:
        part = ToolCallPart("save_note", {"text": reply.value["text"]}, tool_call_id="n1")
    else:
        part = TextPart(reply.value["text"])
    return ModelResponse(parts=[part], usage=usage, model_name="sim-small")


def model() -> tuple[Model, str, str]:
    """The model, and the provider and model tether prices its requests as."""
    url = os.environ.get("TETHER_AGENT_BASE_URL")
    if not url:
        return FunctionModel(simulated, model_name="sim-small"), "simulated", "sim-small"
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    client = AsyncOpenAI(base_url=url, api_key=os.environ.get("OPENAI_API_KEY", "sk-local"),
                         max_retries=0)
    return (OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
            "openai", "gpt-4o-mini")


served, provider, priced = model()
agent = Agent(served, instructions="Research the topic, save one note, then answer.")


@agent.tool_plain
def search(topic: str) -> str:
    """Search for ``topic`` (read-only)."""
    return f"three results about {topic}"


@agent.tool_plain
def save_note(text: str) -> str:
    """Save a note (a side effect: checkpointed, so it happens once)."""
    NOTES.append(text)
    return "saved"


@app.job("research", max_attempts=3)
async def research(ctx, payload):
    durable = Durable(ctx, key="research", provider=provider, model=priced,
                      checkpoint_tools={"save_note"}, max_output_tokens=256)
    result = await agent.run(payload["question"], capabilities=[durable])
    return {"answer": result.output, "model_requests": durable.requests}


if __name__ == "__main__":
    job = app.run("research", {"question": "What makes an agent durable? AGENT:2"},
                  project="p1", idempotency_key="agent-demo-1",
                  budget=Budget(max_cost_usd="0.50", max_calls=20), timeout=60)
    used = job.budget.used
    print(f"job {job.id} {job.state}: {job.result['model_requests']} model requests, "
          f"{used.calls} paid, ${used.spent_usd:.6f} of ${job.budget.limits.max_cost_usd}")
    print(f"answer: {job.result['answer'][:70]}")
    app.close()
