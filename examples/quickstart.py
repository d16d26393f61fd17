"""The README's quick start, complete: summarize a document chunk by chunk.

The text is split in a checkpointed stage; every chunk is summarized by a journaled, budgeted
LLM call, eight at a time. The simulated provider stands in for a real SDK (it answers at once,
for free, and keeps its own bill in ``quickstart-bill.jsonl``); with a real one, ``fn`` would be
``lambda: client.chat.completions.create(...)`` on a client built with ``max_retries=0``.

Run it:  python examples/quickstart.py
It submits the job (idempotency key ``doc-42``), runs it with a worker in this process and
prints the result. Run it again: the same key returns the finished job and nothing is paid
twice. Or run workers apart: ``tether worker --app examples.quickstart:app``.
"""

from __future__ import annotations

from tether import Budget, Estimate, Tether
from tether.providers.simulated import SimulatedProvider

app = Tether()  # TETHER_DATABASE_URL, default sqlite:///./tether.db
llm = SimulatedProvider("quickstart-bill.jsonl")

TEXT = """tether runs long, expensive jobs such as LLM pipelines.

A crashed worker does not restart a job from scratch: finished stages are checkpointed and
every paid call is journaled, so a resumed job never pays for the same call twice.

Budgets are checked before each call: the worst case is reserved first, and a job that would
cross its limit pauses instead of spending.

Everything that happens to a job is an event in an append-only log."""


def split(text: str) -> list[str]:
    """The text's paragraphs."""
    return [p.strip() for p in text.split("\n\n") if p.strip()]


@app.job("summarize", safe_to_retry=True, max_attempts=3)
def summarize(ctx, payload):
    chunks = ctx.stage("chunk", lambda: split(payload["text"]))          # checkpointed

    def one(item):
        i, chunk = item
        prompt = f"Summarize in one sentence:\n{chunk}"
        answer = ctx.call(                                                # journaled, budgeted
            key=f"gen-{i}", provider="simulated", model="sim-small",
            estimate=Estimate(input_text=prompt, max_output_tokens=64),
            fn=lambda: llm.complete(prompt, key=f"gen-{i}", max_tokens=64, job_id=ctx.id))
        return answer["text"]
    return {"summaries": ctx.map(one, enumerate(chunks), concurrency=8)}


if __name__ == "__main__":
    job = app.run("summarize", {"text": TEXT}, project="p1", idempotency_key="doc-42",
                  budget=Budget(max_cost_usd="2.00", max_calls=500), timeout=60)
    used = job.budget.used
    print(f"job {job.id} {job.state}: {len(job.result['summaries'])} summaries, "
          f"{used.calls} calls, ${used.spent_usd:.6f} of ${job.budget.limits.max_cost_usd}")
    for line in job.result["summaries"]:
        print(f"- {line[:60]}")
    app.close()
