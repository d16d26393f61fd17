"""Job types for the CLI tests, loaded by `tether worker --app tests.e2e.cli_jobs:app`."""

from __future__ import annotations

import time

from tether import Tether

app = Tether()


@app.job("echo")
def echo(ctx, payload):
    """Succeeds at once with its payload, after naming a stage."""
    ctx.set_stage("echo")
    return {"echo": payload}


@app.job("boom", max_attempts=1)
def boom(ctx, payload):
    """Fails on its first attempt with a bug-class error."""
    raise ValueError(payload.get("message", "boom"))


@app.job("steps")
def steps(ctx, payload):
    """Runs ``n`` steps of ``step_s`` seconds, each a safe boundary (cancel and pause land)."""
    ctx.set_stage("stepping")
    for _ in range(payload.get("n", 10)):
        ctx.check()
        time.sleep(payload.get("step_s", 0.05))
    return {"steps": payload.get("n", 10)}


@app.job("switch_interval")
def switch_interval(ctx, payload):
    """The GIL switch interval of the process running the job (``worker/process.py``)."""
    import sys
    return {"s": sys.getswitchinterval()}
