"""A job type whose prompt, model, stage version, added stage and policy come from the
environment: each worker process started with other values is a deployment of changed code
(``tests/integration/test_replay_deploys.py``)."""

from __future__ import annotations

import os

from tether import Estimate, Tether, stage
from tether.providers.simulated import SimulatedProvider

app = Tether()
sim = SimulatedProvider(os.environ.get("TETHER_SIM_BILL", "bill.jsonl"), seed=1)
PROMPT = os.environ.get("TETHER_TEST_PROMPT", "Write a haiku about tides.")
MODEL = os.environ.get("TETHER_TEST_MODEL", "sim-small")
ADDED_STAGE = os.environ.get("TETHER_TEST_ADDED_STAGE") == "1"
ON_CHANGE = os.environ.get("TETHER_TEST_ON_CHANGE", "pause")


@stage("outline")
def outline(ctx, payload):
    """The stage a deploy adds before ``plan``: one paid call of its own, ``gen-0``."""
    return ctx.call(key="gen-0", provider="simulated", model=MODEL,
                    estimate=Estimate(input_text="Outline tides.", max_output_tokens=20),
                    fn=lambda: sim.complete("Outline tides.", key="gen-0", max_tokens=20,
                                            model=MODEL, job_id=ctx.id))


@stage("plan", version=os.environ.get("TETHER_TEST_PLAN_VERSION"))
def plan(ctx, payload):
    return {"topic": "tides"}


@app.job("writer", stages=[outline, plan] if ADDED_STAGE else [plan], on_change=ON_CHANGE)
def writer(ctx, planned):
    """Journals ``gen-1`` in stage ``draft``, then waits for signal ``go``."""
    def draft():
        text = ctx.call(key="gen-1", provider="simulated", model=MODEL,
                        estimate=Estimate(input_text=PROMPT, max_output_tokens=40),
                        fn=lambda: sim.complete(PROMPT, key="gen-1", max_tokens=40, model=MODEL,
                                                job_id=ctx.id))
        ctx.wait_for_signal("go")
        return text
    return ctx.stage("draft", draft)
