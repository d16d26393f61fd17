"""A seeded spend history served by a real API server, for the spend e2e tests.

``spend_site`` (module scope, once per backend) seeds 3 projects x 2 models x 3 days of
simulated calls in this process, the fake clock placed on the last three UTC days before
today, then starts ``python -m tether.api`` (REST and dashboard) over that database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest

from tether import FakeClock, Tether
from tests.e2e.api_harness import BACKENDS, Server, backend_url, run_server
from tests.spend_seed import Seeded, seed


@dataclass
class SpendSite:
    backend: str
    url: str
    server: Server
    seeded: Seeded
    tokens: dict[str, str]
    app: Tether


@pytest.fixture(scope="module", params=BACKENDS)
def spend_site(request, tmp_path_factory) -> Iterator[SpendSite]:
    tmp = tmp_path_factory.mktemp(f"spend-{request.param}")
    url = backend_url(request.param, tmp)
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    clock = FakeClock(today - timedelta(days=3))
    app = Tether(url, clock=clock)
    seeded = seed(app, clock, tmp / "bill.jsonl", first_day=today - timedelta(days=3))
    tokens = {"admin": app.store.create_token(name="ops", projects=[], admin=True)[1],
              "alpha": app.store.create_token(name="alpha", projects=["alpha"],
                                              admin=False)[1]}
    try:
        with run_server(url, tmp) as server:
            yield SpendSite(request.param, url, server, seeded, tokens, app)
    finally:
        app.close()
