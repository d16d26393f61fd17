"""A job that mails its callback URL (a line appended to the file ``TETHER_OUTBOX``), for the
crash tests: with ``TETHER_CALLBACK_CRASH_FLAG`` set, the first worker SIGKILLs itself once,
after the mail went out and before the hook returned, and leaves the flag file behind."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tether import Tether

app = Tether(public_url="https://tether.example.com")


@app.job("ask_by_mail")
def ask_by_mail(ctx, payload):
    def mail(callback):
        with open(os.environ["TETHER_OUTBOX"], "a") as fh:
            fh.write(callback.url + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        flag = os.environ.get("TETHER_CALLBACK_CRASH_FLAG")
        if flag and not Path(flag).exists():
            Path(flag).write_text("crashed")
            os.kill(os.getpid(), signal.SIGKILL)
    return {"answer": ctx.wait_for_signal("approve", callback=mail)}
