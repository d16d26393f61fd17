"""The shared limiter's state in every interface that shows operators the engine: the CLI
(``tether rate-limits``), REST (``GET /api/v1/rate-limits``) and ``/metrics``; one store, what
one worker's call was told."""

from __future__ import annotations

import json

import pytest

from tether import Tether
from tether.core.headroom import Headroom, RateLimit
from tests.e2e.api_harness import migrate_database, run_server
from tests.e2e.clitools import run_main

SCOPE = "openai/gpt-4o-mini"


@pytest.fixture
def told(tmp_path, monkeypatch) -> str:
    """A database where one call was granted under SCOPE and told 40 requests and 9000 tokens
    remain for the next 50 s, and a second call was granted since."""
    monkeypatch.setenv("NO_COLOR", "1")
    url = f"sqlite:///{tmp_path}/tether.db"
    migrate_database(url)
    app = Tether(url)
    limits = [RateLimit(SCOPE)]
    app.store.acquire_rate(limits, tokens=1500, job_id=1, key="q")
    app.store.settle_rate(1, "q", 1200, scopes=[SCOPE], headroom=Headroom(
        requests_limit=50, requests_remaining=40, requests_reset_s=50,
        tokens_limit=10_000, tokens_remaining=9_000, tokens_reset_s=50))
    app.store.acquire_rate(limits, tokens=1500, job_id=2, key="q")
    app.close()
    return url


def test_cli_lists_what_is_left(capsys, told):
    table = run_main(capsys, "rate-limits", db=told)
    assert table.code == 0, table
    row = next(line for line in table.out.splitlines() if SCOPE in line)
    assert row.split()[1:] == ["2", "2700", "39", "7500", "-"]
    data = json.loads(run_main(capsys, "rate-limits", "--json", db=told).out)
    assert data[0]["provider"]["requests_remaining"] == 40
    assert data[0]["provider"]["calls_since"] == 1


def test_cli_says_so_when_no_scope_is_in_use(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    url = f"sqlite:///{tmp_path}/empty.db"
    migrate_database(url)
    assert "no rate-limit scope in use" in run_main(capsys, "rate-limits", db=url).out


def test_rest_and_metrics_show_the_same(told, tmp_path):
    with run_server(told, tmp_path, insecure=True) as srv, srv.client() as c:
        (item,) = c.get("/api/v1/rate-limits").json()["items"]
        assert (item["scope"], item["calls_last_minute"]) == (SCOPE, 2)
        assert item["provider"]["requests_left"] == 39
        assert item["provider"]["tokens_left"] == 7500
        metrics = c.get("/metrics").text
    assert f'tether_rate_limit_calls{{scope="{SCOPE}"}} 2.0' in metrics
    assert f'tether_provider_requests_left{{scope="{SCOPE}"}} 39.0' in metrics
    assert f'tether_provider_tokens_left{{scope="{SCOPE}"}} 7500.0' in metrics
    assert f'tether_provider_retry_after_seconds{{scope="{SCOPE}"}} 0.0' in metrics
