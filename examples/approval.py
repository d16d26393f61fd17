"""Human approval before the expensive stage: plan, ask a person, then generate.

``plan`` is a checkpointed stage with one journaled call: it outlines the sections and works
out what generating them may cost at most. Then the job asks ``ctx.wait_for_signal("approve",
prompt="Approve plan for $...?")`` and waits without a lease or a worker slot, for as long as
the person takes (up to ``approval_timeout_s``). When the answer comes, the job replays: the
plan comes back from its checkpoint and the planning call from the journal (neither is paid
again), and ``generate`` makes one call per section only if the answer approved it.

The answer is ``{"approved": true|false, "value": ...}``, what the dashboard's Approve / Reject
buttons send; a bare ``true`` or ``false`` works too. A signal sent before the job asks is kept
and answers the first question (once). No answer in time raises ``SignalTimeout``, which this
job handles: it ends as ``expired`` without generating.

The simulated provider stands in for a real SDK and keeps its own bill (``TETHER_SIM_BILL``,
default ``approval-bill.jsonl``).

Run it:
    tether worker --app examples.approval:app
    tether submit approval --app examples.approval:app --payload '{"topic": "durable jobs"}'
    tether job status ID        # waits for: signal approve, question: Approve plan for $...?
    tether job signal ID approve --value '{"approved": true}'
"""

from __future__ import annotations

import os
from decimal import Decimal

from tether import Estimate, SignalTimeout, Tether
from tether.providers.simulated import SimulatedProvider

app = Tether()  # TETHER_DATABASE_URL, default sqlite:///./tether.db
MODEL = "sim-small"
SECTION_TOKENS = 400


def _llm() -> SimulatedProvider:
    return SimulatedProvider(os.environ.get("TETHER_SIM_BILL", "approval-bill.jsonl"),
                             model=MODEL)


def _ask(ctx, key: str, prompt: str, max_tokens: int) -> str:
    llm = _llm()
    out = ctx.call(key=key, provider="simulated", model=MODEL,
                   estimate=Estimate(input_text=prompt, max_output_tokens=max_tokens),
                   fn=lambda: llm.complete(prompt, key=key, max_tokens=max_tokens,
                                           job_id=ctx.id))
    return out["text"]


def _approved(answer) -> tuple[bool, object]:
    """``{"approved": bool, "value": ...}`` (the dashboard's buttons) or a bare bool."""
    if isinstance(answer, dict):
        return answer.get("approved") is True, answer.get("value")
    return answer is True, None


@app.job("approval", max_attempts=3)
def approval(ctx, payload):
    topic = payload.get("topic", "durable jobs")
    sections = int(payload.get("sections", 3))

    def plan():
        outline = _ask(ctx, "plan", f"Outline {sections} sections about {topic}.", 64)
        price = app.price_profile.price("simulated", MODEL)
        prompt_tokens = len(f"Write section 1 of {sections} about {topic}: {outline}") // 2
        worst = sections * price.worst_case(prompt_tokens, SECTION_TOKENS)
        return {"outline": outline, "sections": sections,
                "max_cost_usd": str(worst.quantize(Decimal("0.0001")))}

    planned = ctx.stage("plan", plan)                                     # checkpointed
    try:
        answer = ctx.wait_for_signal(                                     # no lease held
            "approve", timeout=float(payload.get("approval_timeout_s", 86_400)),
            prompt=(f"Approve plan for ${planned['max_cost_usd']}? "
                    f"{planned['sections']} sections about {topic}"),
            schema={"type": "object", "properties": {"approved": {"type": "boolean"},
                                                     "value": {}}})
    except SignalTimeout:
        return {"status": "expired", "plan": planned}
    ok, note = _approved(answer)
    if not ok:
        return {"status": "rejected", "note": note, "plan": planned}

    def generate():
        return [_ask(ctx, f"section-{i}", f"Write section {i} of {sections} about {topic}: "
                     f"{planned['outline']}", SECTION_TOKENS) for i in range(1, sections + 1)]

    return {"status": "approved", "note": note, "plan": planned,
            "sections": ctx.stage("generate", generate)}
