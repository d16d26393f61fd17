"""Job types for the multi-process trace test (``tests/integration/test_otel_trace.py``).

A worker process started with ``TETHER_TEST_SPANS=FILE`` writes every span it ends to FILE
(``tests/otel.py``). ``traced_pipeline`` is two stages and three calls; on the attempt that
finds no ``ready`` file, stage ``draft`` makes its first call, writes the file (the worker's
pid) and waits to be SIGKILLed, so the next attempt replays that call from the journal.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tether import Estimate, Metered, Tether, Usage
from tests.otel import configure_from_env

configure_from_env()
app = Tether()

ESTIMATE = Estimate(input_tokens=40, max_output_tokens=20)
USAGE = {"outline": Usage(31, 12), "body": Usage(35, 17), "review": Usage(22, 9)}
"""What each call reports (the provider's side of the ledger)."""


def call(ctx, key):
    return ctx.call(key=key, provider="simulated", model="sim-small", estimate=ESTIMATE,
                    fn=lambda: Metered(f"{key} text", USAGE[key]))


def draft(ctx, payload):
    outline = call(ctx, "outline")
    ready = Path(payload["ready"])
    if not ready.exists():
        ready.write_text(str(os.getpid()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the test kills this process meanwhile
            time.sleep(0.05)
        raise RuntimeError("the test never killed this worker")
    return {"outline": outline, "body": call(ctx, "body")}


def review(ctx, drafted):
    verdict = call(ctx, "review")
    ctx.enqueue("traced_child", {"verdict": verdict}, key="publish")
    return {**drafted, "review": verdict}


app.pipeline("traced_pipeline", [draft, review], max_attempts=3)


@app.job("traced_child")
def traced_child(ctx, payload):
    return payload
