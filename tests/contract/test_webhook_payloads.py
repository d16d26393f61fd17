"""Every webhook body the outbox makes matches its kind's JSON schema, as shipped in
docs/webhooks/<kind>.schema.json (the schemas docs/alerts.md publishes), on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tether import BudgetExhausted, Tether, WebhookSettings
from tether.core.webhooks import KINDS

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "webhooks"


def schema(kind: str) -> dict:
    return json.loads((SCHEMAS / f"{kind}.schema.json").read_text())


def test_there_is_one_schema_per_kind_and_each_is_valid():
    assert sorted(p.name for p in SCHEMAS.glob("*.schema.json")) == sorted(
        f"{k}.schema.json" for k in KINDS)
    for kind in KINDS:
        jsonschema.Draft202012Validator.check_schema(schema(kind))


@pytest.fixture
def hooks(database_url, clock):
    a = Tether(database_url, clock=clock, webhooks=WebhookSettings(allow_private=True))

    @a.job("ok")
    def ok(ctx, payload):
        return 1

    @a.job("boom", max_attempts=1)
    def boom(ctx, payload):
        raise ValueError("no")

    @a.job("broke")
    def broke(ctx, payload):
        raise BudgetExhausted("over the limit", metric="cost")

    @a.job("asks")
    def asks(ctx, payload):
        return ctx.wait_for_signal("approve")

    yield a
    a.close()


def test_every_kind_of_body_matches_its_schema(hooks, clock):
    hooks.add_webhook("http://127.0.0.1:9/h", list(KINDS), project="p")
    hooks.schedule("minutely", cron="* * * * *", type="ok", project="p")
    clock.advance(1)
    for type in ("ok", "boom", "broke", "asks"):
        job = hooks.submit(type, {}, project="p")
        hooks.worker(concurrency=1, queues=["default"], webhook_interval=None,
                     schedule_interval=None, poll_interval=0.01).run(install_signals=False,
                                                                     max_jobs=1)
    hooks.store.append_event(job.id, "budget_threshold", {
        "scope": "project", "project": "p", "metric": "cost_usd", "threshold": 0.8,
        "limit": "10.00", "used": "8.25", "period_start": None})
    hooks.run_schedules(now=clock.time() + 60 * 10)
    hooks.webhook_step()
    bodies = {d.kind: d.body for d in hooks.deliveries(limit=100)}
    assert sorted(bodies) == sorted(KINDS)
    for kind, body in bodies.items():
        jsonschema.validate(body, schema(kind), format_checker=jsonschema.FormatChecker())
