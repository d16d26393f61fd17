"""Job types served by the dashboard's browser tests (``--app tests.e2e.test_dashboard_app:app``).

No tests live here: this is the app the ``tether serve`` subprocess loads, so the pages show
real stages, checkpoints, provider calls, ledger rows and failures. Provider calls go to the
simulated provider, billed to ``TETHER_SIM_BILL``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tether import Estimate, Tether
from tether.providers.simulated import SimulatedProvider

app = Tether()
MODEL = "sim-large"


def _provider() -> SimulatedProvider:
    return SimulatedProvider(os.environ.get("TETHER_SIM_BILL", "sim-bill.jsonl"), model=MODEL)


def _ask(ctx, provider: SimulatedProvider, key: str, prompt: str) -> str:
    out = ctx.call(key=key, provider="simulated", model=MODEL,
                   estimate=Estimate(input_tokens=len(prompt.encode()), max_output_tokens=64),
                   fn=lambda: provider.complete(prompt, key=key, max_tokens=64, job_id=ctx.id))
    return out["text"]


@app.job("long_loop")
def long_loop(ctx, payload):
    """Runs for a long time over safe boundaries, so pause, resume and cancel reach it."""
    for _ in range(payload.get("steps", 100_000)):
        ctx.check()
        time.sleep(payload.get("step_s", 0.02))
    return {"steps": payload.get("steps", 100_000)}


@app.job("gated_loop")
def gated_loop(ctx, payload):
    """Reaches a safe boundary only while the file ``payload["gate"]`` exists, so a test decides
    when a pause or cancel lands."""
    gate = Path(payload["gate"])
    while True:
        while not gate.exists():
            time.sleep(0.01)
        ctx.check()
        time.sleep(0.01)


@app.job("always_fails", max_attempts=1)
def always_fails(ctx, payload):
    raise ValueError(payload.get("message", "the input document is empty"))


def outline(ctx, payload):
    provider = _provider()
    text = payload["text"] * 40
    return [_ask(ctx, provider, f"outline-{i}", f"Outline part {i}: {text}") for i in range(2)]


def draft(ctx, sections):
    provider = _provider()
    return [_ask(ctx, provider, f"draft-{i}", f"Draft this section: {s}" * 20)
            for i, s in enumerate(sections)]


def review(ctx, drafts):
    for _ in range(int(os.environ.get("TETHER_REVIEW_STEPS", "50"))):
        ctx.check()
        time.sleep(0.02)
    return {"sections": len(drafts), "approved": True}


app.pipeline("write_report", [outline, draft, review])


@app.job("approval")
def approval(ctx, payload):
    """Plans, then waits for a person: the dashboard shows the prompt with Approve / Reject."""
    plan = ctx.stage("plan", lambda: {"cost": payload.get("cost", "42.00")})
    answer = ctx.wait_for_signal("approve", timeout=3600,
                                 prompt=f"Approve plan for ${plan['cost']}?",
                                 schema={"type": "object",
                                         "properties": {"approved": {"type": "boolean"}}})
    return {"answer": answer}
@app.job("batched")
def batched(ctx, payload):
    """Two requests as one simulated provider batch (``TETHER_SIM_BATCH_DIR``), which ends at
    once: the worker's sweep settles it and the job finishes with the answers."""
    answers = ctx.batch(key="gen", provider="simulated", model="sim-small",
                        requests={"a": {"prompt": "one"}, "b": {"prompt": "two"}},
                        estimate=Estimate(input_tokens=100, max_output_tokens=50))
    return sorted(answers)


@app.job("stepped")
def stepped(ctx, payload):
    """Appends ``tick`` event n once the file ``<dir>/tick-<n>`` exists, for n = 1..ticks: a
    test decides when each event happens."""
    folder = Path(payload["dir"])
    for n in range(1, payload.get("ticks", 3) + 1):
        while not (folder / f"tick-{n}").exists():
            ctx.check()
            time.sleep(0.01)
        ctx.event("tick", n=n)
    return {"ticks": payload.get("ticks", 3)}
