"""Job types for the budget and crash tests (loaded by real worker processes)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tether import Estimate, Tether
from tether.providers.simulated import SimulatedProvider

app = Tether()
sim = SimulatedProvider(os.environ.get("TETHER_SIM_BILL", "bill.jsonl"), seed=3,
                        latency_s=float(os.environ.get("TETHER_SIM_LATENCY", "0.02")))


@app.job("burner", max_attempts=20)
def burner(ctx, payload):
    """``calls`` budgeted calls, eight at a time."""
    def one(i):
        key = f"c{i}"
        prompt = f"job {ctx.id} call {i} " + "x" * 200
        return ctx.call(key=key, provider="simulated", model="sim-small",
                        estimate=Estimate(input_text=prompt, max_output_tokens=40),
                        fn=lambda: sim.complete(prompt, key=key, max_tokens=40, job_id=ctx.id))
    outs = ctx.map(one, range(payload["calls"]), concurrency=8)
    return {"calls": len(outs)}


@app.job("two_stages", max_attempts=5)
def two_stages(ctx, payload):
    """Stage two's blob is written, then (once) the process dies before its manifest row."""
    marks = Path(payload["marks"])

    def mark(name):
        with open(marks, "a") as fh:
            fh.write(name + "\n")

    one = ctx.stage("one", lambda: (mark("one"), {"v": 1})[1])
    crash_flag = Path(payload["marks"] + ".crashed")
    if not crash_flag.exists():
        real_save = ctx.store.save_checkpoint

        def save_then_die(*args, **kwargs):
            if kwargs.get("stage") == "two":
                crash_flag.write_text("1")
                os.kill(os.getpid(), signal.SIGKILL)
            return real_save(*args, **kwargs)
        ctx.store.save_checkpoint = save_then_die
    two = ctx.stage("two", lambda: (mark("two"), {"v": one["v"] + 1})[1])
    return {"two": two["v"]}


@app.job("child_of")
def child_of(ctx, payload):
    return {"parent": payload["parent"]}


@app.job("parent_dies_once", max_attempts=5)
def parent_dies_once(ctx, payload):
    """Enqueues its child, then (on the first attempt only) dies before finishing."""
    child = ctx.enqueue("child_of", {"parent": ctx.id}, key="only-child")
    flag = Path(payload["flag"])
    if not flag.exists():
        flag.write_text(str(child.id))
        os.kill(os.getpid(), signal.SIGKILL)
    return {"child": child.id}
