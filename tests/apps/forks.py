"""A five-stage pipeline for the fork tests (loaded by real worker processes and the CLI).

Every stage makes two calls to the simulated provider, which bills each call it answers to
``TETHER_SIM_BILL``; stages 1-2 prompt with the payload's ``topic``, stages 3-5 with its
``prompt``, so a fork from stage 3 with a new prompt changes what stages 3-5 ask. With
``{"review_needs": PATH}`` the review stage fails (policy block, after its calls) until PATH
exists, which a retry test creates before retrying."""

from __future__ import annotations

import os

from tether import Estimate, PolicyBlock, Tether
from tether.providers.simulated import SimulatedProvider

app = Tether()
sim = SimulatedProvider(os.environ.get("TETHER_SIM_BILL", "bill.jsonl"), seed=5,
                        latency_s=float(os.environ.get("TETHER_SIM_LATENCY", "0.01")))

STAGES = ("draft", "outline", "validate", "review", "export")


def _stage(name: str):
    def run(ctx, value):
        text = ctx.payload["topic"] if name in STAGES[:2] else ctx.payload["prompt"]
        outs = []
        for i in range(2):
            key = f"{name}-{i}"
            prompt = f"{name} {i}: {text}"
            answer = ctx.call(key=key, provider="simulated", model="sim-small",
                              estimate=Estimate(input_text=prompt, max_output_tokens=32),
                              fn=lambda p=prompt, k=key: sim.complete(p, key=k, max_tokens=32,
                                                                      job_id=ctx.id))
            outs.append(answer["text"])
        needs = ctx.payload.get("review_needs")
        if name == "review" and needs and not os.path.exists(needs):
            raise PolicyBlock(f"review needs {needs}")
        return {"stage": name, "prompt": text, "outs": outs,
                "before": None if value is None or "stage" not in value else value["stage"]}
    run.__name__ = name
    return run


app.pipeline("five_stages", [_stage(s) for s in STAGES], max_attempts=3)
