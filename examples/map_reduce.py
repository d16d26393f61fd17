"""Map-reduce over a document set: one child job per document, a parent that gathers them.

The parent (``report``) enqueues one ``summarize-doc`` child per document and gathers their
results with ``ctx.map_jobs``; while the children run it waits WITHOUT a lease or a worker slot.
When the last child finishes, the parent is queued again in that child's own transaction; it
replays (the children are found again by their derived keys, nothing is enqueued twice), gets
every summary in order and pays for one final call that writes the report. Every child's calls
count against the parent's budget, reserved before each call, so the whole fan-out cannot
overspend it. The simulated provider stands in for a real LLM and keeps its own bill.

Run it:  python examples/map_reduce.py
Or run workers apart: ``tether worker --app examples.map_reduce:app``.
"""

from __future__ import annotations

import os

from tether import Budget, Estimate, Tether
from tether.providers.simulated import SimulatedProvider

app = Tether()  # TETHER_DATABASE_URL, default sqlite:///./tether.db
llm = SimulatedProvider(os.environ.get("TETHER_BILL", "map-reduce-bill.jsonl"),
                        latency_s=float(os.environ.get("TETHER_SIM_LATENCY", "0")))

TOPICS = ["leases", "heartbeats", "budgets", "ledgers", "checkpoints", "journals", "retries",
          "signals", "timers", "schedules", "forks", "events"]


def documents(n: int = 12) -> list[dict[str, str]]:
    """A deterministic document set: three short paragraphs on each topic."""
    return [{"name": f"doc-{i:02d}", "text": "\n\n".join(
        f"Paragraph {p} on {TOPICS[i % len(TOPICS)]}: why a durable engine keeps them, "
        f"and what a crash at any instant must not lose." for p in range(3))}
        for i in range(n)]


def ask(ctx, key: str, prompt: str, max_tokens: int = 48) -> str:
    answer = ctx.call(key=key, provider="simulated", model="sim-small",
                      estimate=Estimate(input_text=prompt, max_output_tokens=max_tokens),
                      fn=lambda: llm.complete(prompt, key=key, max_tokens=max_tokens,
                                              job_id=ctx.id))
    return answer["text"]


@app.job("summarize-doc", safe_to_retry=True, max_attempts=10)
def summarize_doc(ctx, doc):
    """The map step: one sentence per paragraph, journaled per paragraph."""
    paragraphs = ctx.stage("split", lambda: [p for p in doc["text"].split("\n\n") if p])
    lines = ctx.map(lambda ip: ask(ctx, f"para-{ip[0]}", f"Summarize: {ip[1]}"),
                    enumerate(paragraphs), concurrency=3)
    return {"doc": doc["name"], "summary": " ".join(lines)}


@app.job("report", safe_to_retry=True, max_attempts=10)
def report(ctx, payload):
    """The reduce step: gather every document's summary, then one call writes the report."""
    summaries = ctx.map_jobs("summarize-doc", payload["documents"], key="doc")
    joined = "\n".join(f"{s['doc']}: {s['summary']}" for s in summaries)
    text = ask(ctx, "report", f"Write a report from these summaries:\n{joined}", 96)
    return {"documents": len(summaries), "report": text}


if __name__ == "__main__":
    job = app.run("report", {"documents": documents()}, project="docs",
                  idempotency_key="map-reduce-1", budget=Budget(max_cost_usd="0.50"),
                  timeout=120)
    used = job.budget.used
    print(f"job {job.id} {job.state}: {job.result['documents']} documents summarised by "
          f"{job.result['documents']} child jobs, {used.calls} calls in all, "
          f"${used.spent_usd:.6f} of ${job.budget.limits.max_cost_usd}")
    print(job.result["report"][:200])
