"""Job types the benchmark's tether worker processes load (``--app bench.apps:app``).

Every job is as cheap as a job can be, so what is measured is the engine: claiming, starting,
finishing, journaling. ``stamp`` appends ``marker start_time`` to a file (no fsync: the time
is what matters) so pickup latency is read from outside the worker.
"""

from __future__ import annotations

import asyncio
import os
import time

from tether import Estimate, Tether

def noop(ctx, payload):
    return None


def stamp(ctx, payload):
    now = time.time()
    with open(payload["path"], "a") as fh:
        fh.write(f"{payload['marker']} {now!r} {os.getpid()}\n")
    return None


def hold(ctx, payload):
    """Writes ``marker.attempt`` with its start time, then waits at safe boundaries (for
    recovery: its worker is SIGKILLed meanwhile; a cancel ends it)."""
    now = time.time()
    with open(payload["path"], "a") as fh:
        fh.write(f"{payload['marker']}.{ctx.attempt} {now!r} {os.getpid()}\n")
        fh.flush()
    deadline = time.monotonic() + payload.get("seconds", 60)
    while time.monotonic() < deadline:
        ctx.check()
        time.sleep(0.05)
    return None


def calls(ctx, payload):
    """``payload['n']`` journaled zero-latency simulated calls, ``concurrency`` at a time."""
    from tether.providers.simulated import SimulatedProvider
    provider = SimulatedProvider(payload["bill"], latency_s=0)
    started = time.time()

    def one(i: int):
        prompt = f"item {i}"
        return ctx.call(key=f"c{i}", provider="simulated", model="sim-small",
                        estimate=Estimate(input_text=prompt, max_output_tokens=64),
                        fn=lambda: provider.complete(prompt, key=f"c{i}", max_tokens=64,
                                                     job_id=ctx.id))

    out = ctx.map(one, range(payload["n"]), concurrency=payload.get("concurrency", 8))
    return {"calls": len(out), "started": started, "finished": time.time()}


async def acalls(ctx, payload):
    """``calls`` as an ``async def`` job: ``ctx.acall`` on one event loop, ``concurrency`` at
    a time (a semaphore, as an asyncio LLM pipeline would bound its requests)."""
    from tether.providers.simulated import SimulatedProvider
    provider = SimulatedProvider(payload["bill"], latency_s=0)
    started = time.time()
    gate = asyncio.Semaphore(payload.get("concurrency", 8))

    async def one(i: int):
        prompt = f"item {i}"
        async with gate:
            return await ctx.acall(key=f"c{i}", provider="simulated", model="sim-small",
                                   estimate=Estimate(input_text=prompt, max_output_tokens=64),
                                   fn=lambda: provider.complete(prompt, key=f"c{i}",
                                                                max_tokens=64, job_id=ctx.id))

    out = await asyncio.gather(*(one(i) for i in range(payload["n"])))
    return {"calls": len(out), "started": started, "finished": time.time()}


def llm(ctx, payload):
    """W8's pipeline: ``payload['calls']`` journaled simulated calls one after another, each
    taking ``latency_s`` at the provider, as a job's steps each wait on a model."""
    from tether.providers.simulated import SimulatedProvider
    provider = SimulatedProvider(payload["bill"], latency_s=payload["latency_s"])
    try:
        for i in range(payload["calls"]):
            prompt, key = f"step {i}", f"s{i}"
            ctx.call(key=key, provider="simulated", model="sim-small",
                     estimate=Estimate(input_text=prompt, max_output_tokens=64),
                     fn=lambda prompt=prompt, key=key: provider.complete(
                         prompt, key=key, max_tokens=64, job_id=ctx.id))
    finally:
        provider.close()
    return None


def fanout(ctx, payload):
    """W11's parent: one ``noop`` child per item, gathered (``ctx.map_jobs``); returns how
    many results came back, so the parent's own result stays small."""
    return len(ctx.map_jobs("noop", range(payload["n"])))


def register(app: Tether) -> Tether:
    """Register every benchmark job type on ``app``."""
    app.register("noop", noop)
    app.register("stamp", stamp)
    app.register("hold", hold, safe_to_retry=True, max_attempts=5)
    app.register("calls", calls)
    app.register("acalls", acalls)
    app.register("llm", llm)
    app.register("fanout", fanout)
    return app


def make_app(database_url: str) -> Tether:
    return register(Tether(database_url=database_url))


app = register(Tether())
