"""One agent run inside a tether job: what the agent integrations share.

An agent loop is a model request, tool calls, another model request, dozens of times. Inside a
tether job each model request becomes one ``ctx.acall``:

* its key is ``{key}/model/{n}``, ``n`` counting the run's requests from 1. A replay of the job
  runs the agent again from the top; the recorded responses steer it down the same path, so the
  same request gets the same key, and its journaled response is returned without paying again.
* what it asks (the messages, tools and settings, with the fields a new run stamps afresh —
  timestamps, run and conversation ids — left out) is its ``request``: its fingerprint, so a
  replay that finds it changed follows the journal's change policy (``job/replay.py``).
* its worst case is reserved before it is sent: the UTF-8 length of that request as JSON (never
  fewer bytes than the prompt has tokens; at most the model's context window, where the
  framework knows it) and the request's own output limit, which the integrations always set.
* the usage the response reports is what is settled.

A tool named for checkpointing runs as a tether stage ``{key}/tool/{n}/{name}/{call id}``
(``n``: the model requests made before it): once it has returned, a replay gets its recorded
result and does not run it again.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from ..core.serialize import dumps
from ..core.usage import Estimate, Metered, Usage
from ..errors import InvalidArgument
from ..job.context import JobContext

VOLATILE = frozenset({"timestamp", "run_id", "conversation_id"})
"""Fields a framework stamps afresh on every run: never part of what a request asks."""

DEFAULT_MAX_OUTPUT_TOKENS = 4096
"""The output limit set on a request that sets none: without one there is no worst case."""


def stable(value: Any) -> Any:
    """``value`` (JSON-like) without the ``VOLATILE`` fields, at any depth."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list | tuple):
        return [stable(v) for v in value]
    return value


class AgentRun:
    """The keys, estimates and checkpoints of one agent run in the job ``ctx``.

    ``key`` names the run within the job: two runs in one job need two keys;
    ``checkpoint_tools``: the names of the tools to checkpoint (one name alone is one
    name), or True for every tool."""

    def __init__(self, ctx: JobContext, *, key: str,
                 max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
                 checkpoint_tools: Collection[str] | bool = (),
                 on_change: str | None = None) -> None:
        if not isinstance(key, str) or not key or "/" in key:
            raise InvalidArgument(f"an agent run needs a key without '/', not {key!r}")
        if not isinstance(max_output_tokens, int) or max_output_tokens <= 0:
            raise InvalidArgument("max_output_tokens must be a positive integer")
        self.ctx, self.key = ctx, key
        self.max_output_tokens = max_output_tokens
        self.on_change = on_change
        self._checkpoint: frozenset[str] | bool = (
            checkpoint_tools if isinstance(checkpoint_tools, bool)
            else frozenset([checkpoint_tools]) if isinstance(checkpoint_tools, str)
            else frozenset(checkpoint_tools))
        self._requests = 0
        self._lock = threading.Lock()

    @property
    def requests(self) -> int:
        """How many model requests this run has made (replayed ones included)."""
        return self._requests

    def _next_key(self) -> str:
        with self._lock:
            self._requests += 1
            return f"{self.key}/model/{self._requests}"

    async def request(self, *, provider: str, model: str, request: Any, max_output_tokens: int,
                      send: Callable[[], Awaitable[tuple[Any, Usage]]],
                      context_window: int | None = None) -> Any:
        """One model request as a journaled, budgeted call, priced as ``provider``'s ``model``:
        ``send()`` makes it and returns (its response as JSON, its usage); the response as JSON
        is returned, recorded or new. Its input is bounded by the request's length and, when
        the model's ``context_window`` is known, by that: a prompt longer than its window is
        refused by the provider, not billed."""
        asked = stable(request)
        text = dumps(asked, what="agent request")
        bound = len(text.encode("utf-8"))
        if isinstance(context_window, int) and context_window > 0:
            bound = min(bound, context_window)

        async def call() -> Metered:
            value, usage = await send()
            return Metered(value, usage)

        return await self.ctx.acall(
            key=self._next_key(), provider=provider, model=model,
            estimate=Estimate(input_tokens=bound, max_output_tokens=max_output_tokens),
            request=asked, fn=call, on_change=self.on_change)

    def checkpoints(self, tool: str) -> bool:
        """Whether the tool ``tool`` runs checkpointed."""
        if isinstance(self._checkpoint, bool):
            return self._checkpoint
        return tool in self._checkpoint

    async def tool(self, name: str, call_id: str, run: Callable[[], Awaitable[Any]]) -> Any:
        """``run()`` (the tool's call) as a checkpointed stage; its result must be JSON.

        The stage is the job's (``ctx.stage``, synchronous: it runs on a thread while the
        tool's coroutine runs on this loop). A stage that ran names itself the job's current
        stage; the stage the job was in is set back after it, so the model requests that
        follow are recorded in that stage, not in the tool's."""
        stage = f"{self.key}/tool/{self._requests}/{name}/{call_id}"
        loop = asyncio.get_running_loop()
        before = self.ctx.job_stage

        async def running() -> Any:
            return await run()

        def body() -> Any:
            return asyncio.run_coroutine_threadsafe(running(), loop).result()

        result = await asyncio.to_thread(self.ctx.stage, stage, body)
        if self.ctx.job_stage != before:
            await asyncio.to_thread(self.ctx.set_stage, before)
        return result
