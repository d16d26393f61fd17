"""A job type whose version comes from the environment (``TETHER_TEST_VERSION``): each worker
process started with another value is a deployment of another version (``tests/integration``)."""

from __future__ import annotations

import os

from tether import Tether

app = Tether()
VERSION = os.environ.get("TETHER_TEST_VERSION", "1")


@app.job("versioned", version=VERSION)
def versioned(ctx, payload):
    """Waits for signal ``go`` when asked to; returns the version and pid that finished it."""
    if payload.get("wait"):
        ctx.wait_for_signal("go")
    return {"version": VERSION, "pid": os.getpid()}
