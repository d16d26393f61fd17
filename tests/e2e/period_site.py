"""Projects with periodic and lifetime budgets served by a real API server, for the period
e2e tests (REST, MCP, metrics, dashboard).

``period_site`` (module scope, once per backend) runs jobs in this process by the real clock,
so their spend lands in the current period the server reads: ``daily`` (a cost limit per
Berlin day, which pauses its job with ``period_budget_exhausted``), ``monthly`` (a cost limit
per UTC month, not reached) and ``lifetime`` (an all-time cost limit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pytest

from tether import Estimate, Job, Metered, Tether, Usage
from tether.job import Lease
from tether.worker.executor import execute
from tests.e2e.api_harness import BACKENDS, Server, backend_url, run_server

LIMITS = {"daily": {"max_cost_usd": "0.00004", "period": "day", "timezone": "Europe/Berlin"},
          "monthly": {"max_cost_usd": "0.5", "period": "month"},
          "lifetime": {"max_cost_usd": "1"}}
CALLS = {"daily": 10, "monthly": 3, "lifetime": 2}


@dataclass
class PeriodSite:
    backend: str
    url: str
    server: Server
    tokens: dict[str, str]
    app: Tether
    jobs: dict[str, int]
    """project -> the job run in it (``daily``'s is paused by its day's limit)"""


def run_calls(app: Tether, project: str, calls: int) -> Job:
    """Run a job of ``calls`` calls in ``project`` here, by the real clock; the job as it ended."""
    job = app.submit("metered_steps", {"calls": calls}, project=project)
    (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    assert claim.job.id == job.id
    execute(app, claim.job, Lease(claim.job.id, claim.attempt))
    return app.get(job.id)


@pytest.fixture(scope="module", params=BACKENDS)
def period_site(request, tmp_path_factory) -> Iterator[PeriodSite]:
    tmp = tmp_path_factory.mktemp(f"periods-{request.param}")
    url = backend_url(request.param, tmp)
    app = Tether(url)

    @app.job("metered_steps")
    def metered_steps(ctx, payload):
        for i in range(payload["calls"]):
            ctx.call(key=f"k{i}", provider="simulated", model="sim-small",
                     estimate=Estimate(input_tokens=10, max_output_tokens=10),
                     fn=lambda: Metered("x", Usage(10, 10)))
        return payload["calls"]

    for project, limits in LIMITS.items():
        app.set_project_budget(project, **limits)
    jobs = {project: run_calls(app, project, CALLS[project]).id for project in LIMITS}
    tokens = {"admin": app.store.create_token(name="ops", projects=[], admin=True)[1],
              "daily": app.store.create_token(name="daily", projects=["daily"],
                                              admin=False)[1]}
    try:
        with run_server(url, tmp) as server:
            yield PeriodSite(request.param, url, server, tokens, app, jobs)
    finally:
        app.close()
