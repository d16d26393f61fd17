"""Job types used by the integration tests (loaded by real worker processes)."""

from __future__ import annotations

import os
import time

from tether import Tether, TransientError

app = Tether()


@app.job("append_line")
def append_line(ctx, payload):
    """The side effect whose exactly-once-ness the tests count (after ``sleep_s``, if given)."""
    time.sleep(payload.get("sleep_s", 0))
    with open(payload["path"], "a") as fh:
        fh.write(f"{payload['n']}\n")
        fh.flush()
        os.fsync(fh.fileno())
    return {"n": payload["n"]}


@app.job("slow_marker")
def slow_marker(ctx, payload):
    """Writes a 'started' marker with its pid, sleeps, then appends the finishing pid."""
    with open(payload["path"] + ".started", "a") as fh:
        fh.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + payload.get("seconds", 3)
    while time.monotonic() < deadline:
        time.sleep(0.05)
    with open(payload["path"], "a") as fh:
        fh.write(f"{os.getpid()}\n")
    return {"pid": os.getpid()}


@app.job("boundary_loop", safe_to_retry=True)
def boundary_loop(ctx, payload):
    """Loops over safe boundaries so cancel, pause and shutdown can reach it."""
    for i in range(payload.get("steps", 1000)):
        ctx.check()
        time.sleep(payload.get("step_s", 0.02))
    return {"steps": payload.get("steps", 1000)}


@app.job("flaky", max_attempts=3)
def flaky(ctx, payload):
    if ctx.attempt < payload.get("succeed_on", 2):
        raise TransientError("try again", retry_after=payload.get("retry_after"))
    return {"attempt": ctx.attempt}


@app.job("not_safe", safe_to_retry=False)
def not_safe(ctx, payload):
    time.sleep(payload.get("seconds", 30))
    return {}


@app.job("ticker")
def ticker(ctx, payload):
    """Appends ``ticks`` events; after ``gate_after`` of them it waits (at safe boundaries) for
    the file ``gate`` to exist, so a test can act while the job is provably mid-way."""
    for i in range(1, payload.get("ticks", 10) + 1):
        ctx.event("tick", n=i)
        if i == payload.get("gate_after"):
            while not os.path.exists(payload["gate"]):
                ctx.check()
                time.sleep(0.02)
    return {"ticks": payload.get("ticks", 10)}


@app.job("switch_interval")
def switch_interval(ctx, payload):
    """The GIL switch interval of the process running the job (``worker/process.py``)."""
    import sys
    return {"s": sys.getswitchinterval()}
