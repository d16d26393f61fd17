"""Simulated provider calls spread over projects, models and days, for the spend tests.

``seed(app, clock, bill)`` registers a job type that calls the simulated provider (which keeps
its own bill, outside tether's store), then runs 3 projects x 2 models x 3 days of jobs
through the real executor, the fake clock set to each day before the day's jobs run. It
returns what the test needs to check a report against: the window and the job ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tether import Estimate, FakeClock, Tether
from tether.job import Lease
from tether.providers.simulated import SimulatedProvider
from tether.worker.executor import execute

PROJECTS = ("alpha", "beta", "gamma")
MODELS = ("sim-small", "sim-large")
DAYS = 3
BUDGETS = {"alpha": "0.05", "beta": "1.00"}
"""Project cost limits (gamma has none): what the burn-down chart draws against."""


@dataclass
class Seeded:
    since: datetime
    until: datetime
    days: list[str]
    jobs: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(project, model, day) -> job id"""


def calls_for(p: int, m: int, d: int) -> int:
    """A different number of calls per group (1 to 4), so every total is distinct."""
    return 1 + (p * 2 + m + d * 3) % 4


def seed(app: Tether, clock: FakeClock, bill: Path, *, first_day: datetime) -> Seeded:
    sim = SimulatedProvider(bill, seed=7)

    @app.job("spend_work")
    def spend_work(ctx, payload):
        model = payload["model"]
        for i in range(payload["calls"]):
            prompt = f"{payload['tag']} call {i}: " + "lorem ipsum " * (3 + i)
            ctx.call(key=f"c{i}", provider="simulated", model=model,
                     estimate=Estimate(input_tokens=len(prompt.encode()), max_output_tokens=64),
                     fn=lambda p=prompt, k=f"c{i}": sim.complete(p, key=k, max_tokens=64,
                                                                model=model, job_id=ctx.id))
        return {"calls": payload["calls"]}

    for project, limit in BUDGETS.items():
        app.set_project_budget(project, max_cost_usd=limit)
    start = first_day.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=timezone.utc)
    out = Seeded(since=start, until=start + timedelta(days=DAYS),
                 days=[(start + timedelta(days=d)).strftime("%Y-%m-%d") for d in range(DAYS)])
    for d in range(DAYS):
        for p, project in enumerate(PROJECTS):
            for m, model in enumerate(MODELS):
                # Spread over the day, the last ones late in the evening (UTC).
                clock.set(start + timedelta(days=d, hours=6 + 3 * (p * 2 + m), minutes=d * 7))
                job = app.submit("spend_work", {"model": model, "calls": calls_for(p, m, d),
                                                "tag": f"{project}/{model}/{d}"},
                                 project=project)
                (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
                execute(app, claim.job, Lease(claim.job.id, claim.attempt))
                assert app.get(job.id).state == "succeeded", app.get(job.id)
                out.jobs[(project, model, out.days[d])] = job.id
    sim.close()
    return out
