"""A second application on the same database as ``tests.apps.basic``: a type it does not
register, so a worker of each app must leave the other's jobs alone."""

from __future__ import annotations

import os

from tether import Tether

app = Tether()


@app.job("other_line")
def other_line(ctx, payload):
    with open(payload["path"], "a") as fh:
        fh.write(f"{payload['n']} {os.getpid()}\n")
    return {"pid": os.getpid()}
