"""Generate at half price: one provider batch instead of a call per request.

``outline`` is a checkpointed stage; then every section is asked for in ONE provider batch
(``ctx.batch``): each request's worst case is reserved at the batch price before the upload,
the job waits without a lease or a worker slot while the provider works, and a worker's sweep
settles every item at the batch price and wakes the job, which replays to its answers. The
result says what the batch cost and what the same tokens would have cost call by call.

The simulated provider's batch mode stands in for OpenAI's Batch API or Anthropic's Message
Batches (``provider="openai"`` or ``"anthropic"`` with the request bodies of those APIs).

Run it:  python examples/batch_generate.py
Or run workers apart: ``tether worker --app examples.batch_generate:app``.
"""

from __future__ import annotations

import os
import tempfile

from tether import Budget, Estimate, Tether
from tether.core.batches import BatchFailure
from tether.providers.batches import SimulatedBatches

app = Tether()  # TETHER_DATABASE_URL, default sqlite:///./tether.db
app.add_batch_provider(SimulatedBatches(
    os.environ.get("TETHER_SIM_BATCH_DIR") or os.path.join(tempfile.gettempdir(),
                                                           "tether-sim-batches"),
    complete_after_s=float(os.environ.get("TETHER_SIM_BATCH_SECONDS", "1"))))
MODEL = "sim-large"


@app.job("batch_generate", max_attempts=3)
def batch_generate(ctx, payload):
    topic = payload["topic"]
    sections = ctx.stage("outline", lambda: [f"{topic}: part {i + 1}"
                                             for i in range(payload.get("sections", 8))])
    answers = ctx.batch(
        key="sections", provider="simulated", model=MODEL,
        requests={f"s{i}": {"prompt": f"Write the section '{title}'.", "max_tokens": 300}
                  for i, title in enumerate(sections)},
        estimate=Estimate(input_tokens=200, max_output_tokens=300))
    (batch,) = app.batches(ctx.id)
    return {"sections": [a["text"] if not isinstance(a, BatchFailure) else None
                         for a in answers.values()],
            "failed": [k for k, a in answers.items() if isinstance(a, BatchFailure)],
            "batch_usd": str(batch.settled_usd), "standard_usd": str(batch.standard_usd)}


if __name__ == "__main__":
    job = app.run("batch_generate", {"topic": "durable jobs"}, project="p1",
                  idempotency_key="batch-demo-1", budget=Budget(max_cost_usd="1.00"),
                  timeout=120)
    r = job.result
    print(f"job {job.id} {job.state}: {len(r['sections'])} sections in one batch, "
          f"${r['batch_usd']} at the batch price (${r['standard_usd']} call by call)")
    app.close()
