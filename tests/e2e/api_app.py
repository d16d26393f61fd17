"""Job types the API and MCP end-to-end tests run (loaded with ``--app tests.e2e.api_app:app``)."""

from __future__ import annotations

import os
import tempfile
import time

from tether import Estimate, PolicyBlock, Tether
from tether.providers.batches import SimulatedBatches
from tether.providers.simulated import SimulatedProvider

app = Tether()


@app.job("echo")
def echo(ctx, payload):
    return {"echo": payload}


@app.job("steps")
def steps(ctx, payload):
    """Loops over safe boundaries, so cancel and pause reach it between steps."""
    n = int(payload.get("steps", 1000))
    for _ in range(n):
        ctx.check()
        time.sleep(float(payload.get("step_s", 0.02)))
    return {"steps": n}


@app.job("held_steps", queue="held")
def held_steps(ctx, payload):
    """``steps`` in the queue "held", which the tests pause before submitting to it (a queue
    a registered job type declares may be paused before it has jobs)."""
    return steps(ctx, payload)


@app.job("refuse", max_attempts=1)
def refuse(ctx, payload):
    raise PolicyBlock("refused by policy")


@app.job("priced")
def priced(ctx, payload):
    """One checkpointed stage, then one journaled, budgeted call to the simulated provider."""
    sim = SimulatedProvider(os.environ.get("TETHER_SIM_BILL", "/tmp/tether-api-sim.jsonl"))
    prompt = ctx.stage("prepare", lambda: payload.get("prompt", "say something"))
    out = ctx.call(key="only", provider="simulated", model="sim-small",
                   estimate=Estimate(input_text=prompt, max_output_tokens=32),
                   fn=lambda: sim.complete(prompt, key="only", max_tokens=32, job_id=ctx.id))
    return {"text": out["text"]}


app.add_batch_provider(SimulatedBatches(
    os.environ.get("TETHER_SIM_BATCH_DIR") or tempfile.mkdtemp(prefix="tether-batches-"),
    complete_after_s=3600))


@app.job("batch")
def batch(ctx, payload):
    """Two requests as one simulated provider batch, which stays in progress for an hour."""
    return ctx.batch(key="b", provider="simulated", model="sim-small",
                     requests={"a": {"prompt": "one"}, "b": {"prompt": "two"}},
                     estimate=Estimate(input_tokens=100, max_output_tokens=50))


@app.job("ask")
def ask(ctx, payload):
    """Waits for the signal "approve" (a person's answer), then returns what it was sent."""
    answer = ctx.wait_for_signal("approve", timeout=payload.get("timeout", 3600),
                                 prompt=payload.get("prompt", "Approve?"),
                                 schema={"type": "object",
                                         "properties": {"approved": {"type": "boolean"}}})
    return {"answer": answer}


@app.job("ask_by_link")
def ask_by_link(ctx, payload):
    """Waits for the signal named ``signal`` (default "approve") and "mails" its callback URL:
    one line appended to the file ``outbox`` (what a mail server would deliver)."""
    def mail(callback):
        with open(payload["outbox"], "a") as fh:
            fh.write(callback.url + "\n")
    answer = ctx.wait_for_signal(payload.get("signal", "approve"), timeout=3600,
                                 prompt=payload.get("prompt", "Approve?"), callback=mail)
    return {"answer": answer}


@app.job("fan_in")
def fan_in(ctx, payload):
    """Gathers children of type "ask": it waits until each child has its answer."""
    kids = [ctx.enqueue("ask", {"prompt": f"child {i}"}, key=f"kid-{i}")
            for i in range(int(payload.get("children", 2)))]
    return {"answers": ctx.gather(kids)}
