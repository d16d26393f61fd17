"""An application whose workers deliver webhooks to a receiver on loopback (allowed here
explicitly), retrying fast: tests/integration/test_webhook_delivery.py."""

from __future__ import annotations

from tether import Tether
from tether.facade.webhook_delivery import WebhookSettings

app = Tether(webhooks=WebhookSettings(allow_private=True, max_attempts=50, backoff_s=0.1,
                                      backoff_cap_s=0.5, timeout_s=120.0))


@app.job("boom", max_attempts=1)
def boom(ctx, payload):
    raise ValueError(f"boom {payload.get('n')}")


@app.job("fine")
def fine(ctx, payload):
    return {"n": payload.get("n")}
