"""Shared helpers of the money-path contract tests: a running job, a price, a reservation."""

from decimal import Decimal

from tether.core.budget import Reservation
from tether.core.pricing import ModelPrice

PRICE = ModelPrice("simulated", "sim-small", Decimal("0.50"), Decimal("1.50"), Decimal("0.25"))


def running_job(app, **submit):
    """A submitted job, claimed and started by worker "w": (job, lease attempt)."""
    if "t" not in app.registry:
        app.register("t", lambda ctx, payload: payload)
    job = app.submit("t", {}, **submit)
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, c.attempt)
    return job, c.attempt


def reserve(app, job, attempt, key, cost="0.10", tin=100, tout=50):
    return app.store.reserve(job.id, attempt, key=key, stage="s", provider="simulated",
                             model="sim-small",
                             reservation=Reservation(Decimal(cost), tin, tout))
