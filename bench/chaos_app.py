"""The job type the chaos runner's worker processes load (``--app bench.chaos_app:app``).

``chaos_pipeline`` is a declared list of four checkpointed stages over the simulated provider:
``plan`` (pure), ``draft`` (one call per section, several at a time), ``review`` (a call for
every other draft, one by one) and ``assemble`` (pure). The provider is configured from the
environment the runner sets: ``CHAOS_BILL`` (its bill file), ``CHAOS_SEED``,
``CHAOS_LATENCY`` ("low,high" seconds), ``CHAOS_TRANSIENT`` and ``CHAOS_REFUSAL`` (rates).
Call keys include the payload's topic (each submitted job has its own), so the seeded failures
differ from job to job while a fork, which keeps its source's topic, asks its source's keys.
With ``{"review_needs": PATH}`` the review stage refuses (a policy block, after its calls)
until PATH exists: the runner creates it and retries the failed job from a stage.
"""

from __future__ import annotations

import hashlib
import os
import random
from typing import Any

from tether import Estimate, JobContext, PolicyBlock, Tether, TransientError
from tether.providers.simulated import SimulatedProvider

app = Tether()
MODEL = "sim-small"
MAX_OUT = 32


def _latency() -> tuple[float, float]:
    low, high = os.environ.get("CHAOS_LATENCY", "0.1,0.6").split(",")
    return float(low), float(high)


sim = SimulatedProvider(os.environ.get("CHAOS_BILL", "chaos-bill.jsonl"),
                        seed=int(os.environ.get("CHAOS_SEED", "1")), model=MODEL,
                        latency_s=_latency(),
                        refusal_rate=float(os.environ.get("CHAOS_REFUSAL", "0.004")))
TRANSIENT = float(os.environ.get("CHAOS_TRANSIENT", "0.03"))
_rng = random.Random()


def _complete(ctx: JobContext, key: str, prompt: str):
    # A 429 strikes at random, unbilled, like a real one (the simulated provider's own are
    # tied to the key and to the asking process, so a call retried on a fresh worker after a
    # kill would meet the same 429 again and again).
    if _rng.random() < TRANSIENT:
        raise TransientError("simulated provider rate limited (429)", status=429,
                             retry_after=0.2)
    return sim.complete(prompt, key=key, max_tokens=MAX_OUT, job_id=ctx.id)


def _call(ctx: JobContext, key: str, prompt: str) -> str:
    key = f"{ctx.payload['topic']}-{key}"
    out = ctx.call(key=key, provider="simulated", model=MODEL,
                   estimate=Estimate(input_text=prompt, max_output_tokens=MAX_OUT),
                   fn=lambda: _complete(ctx, key, prompt))
    return out["text"]


def plan(ctx: JobContext, payload: dict[str, Any]) -> dict[str, Any]:
    topic = payload["topic"]
    return {"topic": topic,
            "sections": [f"{topic} / part {i}" for i in range(payload["sections"])]}


def draft(ctx: JobContext, planned: dict[str, Any]) -> list[dict[str, Any]]:
    def one(item: tuple[int, str]) -> dict[str, Any]:
        i, title = item
        return {"title": title,
                "text": _call(ctx, f"draft-{i}", f"Draft the section '{title}' in 3 lines.")}
    return ctx.map(one, list(enumerate(planned["sections"])),
                   concurrency=ctx.payload.get("concurrency", 3))


def review(ctx: JobContext, drafts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for i, d in enumerate(drafts):
        if i % 2 == 0:
            d = dict(d, review=_call(ctx, f"review-{i}", f"Review this draft:\n{d['text']}"))
        out.append(d)
    needs = ctx.payload.get("review_needs")
    if needs and not os.path.exists(needs):
        raise PolicyBlock(f"review needs {needs}")
    return out


def assemble(ctx: JobContext, reviewed: list[dict[str, Any]]) -> dict[str, Any]:
    body = "\n".join(f"{d['title']}: {d['text']}" for d in reviewed)
    return {"sections": len(reviewed), "sha256": hashlib.sha256(body.encode()).hexdigest()}


app.pipeline("chaos_pipeline", [plan, draft, review, assemble], max_attempts=10)


def expected_calls(sections: int) -> int:
    return sections + (sections + 1) // 2


# --- the workflow mix: fan-out/fan-in, durable timers, signals ---------------------------------

@app.job("chaos_fanout", max_attempts=10)
def chaos_fanout(ctx: JobContext, payload: dict[str, Any]) -> dict[str, Any]:
    """A parent that gathers ``chaos_pipeline`` children (without a lease while they run),
    sleeps on a durable timer, then pays for one merge call. Its children's calls count
    against its budget."""
    children = [{"topic": f"{payload['topic']}/{i}", "sections": 3, "concurrency": 2}
                for i in range(payload["children"])]
    results = ctx.map_jobs("chaos_pipeline", children, fail="collect")
    ctx.sleep(payload.get("pause_s", 0.5))
    done = [r for r in results if isinstance(r, dict) and "sha256" in r]
    merged = _call(ctx, "merge", "Merge: " + ",".join(r["sha256"][:8] for r in done))
    return {"children": len(results), "succeeded": len(done), "merged": merged[:16]}


@app.job("chaos_approval", max_attempts=10)
def chaos_approval(ctx: JobContext, payload: dict[str, Any]) -> dict[str, Any]:
    """Plan with a call, wait for the runner's signal ``go`` (or time out), then draft."""
    from tether import SignalTimeout
    plan = ctx.stage("plan", lambda: _call(ctx, "plan", f"Plan {payload['topic']}"))
    try:
        answer = ctx.wait_for_signal("go", timeout=payload.get("timeout_s", 5.0),
                                     prompt=f"Approve the plan for {payload['topic']}?")
    except SignalTimeout:
        return {"approved": False, "plan": plan[:16]}
    text = _call(ctx, "draft", f"Draft from plan {plan[:32]}")
    return {"approved": True, "value": answer, "draft": text[:16]}
