"""Webhooks in the store and on the facade, on every backend: subscriptions and their scope,
the outbox step (which events become deliveries, each exactly once, only to the
subscriptions that match), schedule misses, dead letters and re-sends. Sending over real HTTP
is tests/integration/test_webhook_delivery.py.

Time is the ``app`` fixture's FakeClock; the store uses it as its clock."""

from __future__ import annotations

import pytest

from tether import Tether
from tether.core.webhooks import DELIVERY_TYPE, KINDS
from tether.errors import (
    InvalidArgument, JobStateError, WebhookNotFound, WebhookTargetRefused,
)
from tether.facade import webhooks as webhooks_facade
from tether.facade.webhook_delivery import WebhookSettings

URL = "http://127.0.0.1:9/hook"


@pytest.fixture
def hooks(database_url, clock):
    a = Tether(database_url, clock=clock, webhooks=WebhookSettings(allow_private=True,
                                                                     max_attempts=2))

    @a.job("ok")
    def ok(ctx, payload):
        return {"fine": True}

    @a.job("boom", max_attempts=1)
    def boom(ctx, payload):
        raise ValueError("no")

    @a.job("asks")
    def asks(ctx, payload):
        return ctx.wait_for_signal("approve")

    yield a
    a.close()


def delivery_id_of(app, sub_id):
    return app.deliveries(webhook=sub_id, limit=1)[0].id


def run(app, type, project="p1"):
    """Submit a job and run it until it ends or waits."""
    job = app.submit(type, {}, project=project)
    app.worker(concurrency=1, queues=["default"], webhook_interval=None,
               schedule_interval=None, poll_interval=0.01).run(install_signals=False,
                                                               max_jobs=1)
    return app.get(job.id)


def test_loopback_and_private_targets_are_refused_unless_allowed(app):
    assert not app.webhook_settings.allow_private
    for url in ("http://127.0.0.1:8080/x", "http://localhost/x", "http://10.1.2.3/x",
                "http://169.254.169.254/latest", "http://[::1]/x"):
        with pytest.raises(WebhookTargetRefused):
            app.add_webhook(url, ["job.failed"], project="p1")
    with pytest.raises(InvalidArgument):
        app.add_webhook("ftp://example.com/x", ["job.failed"], project="p1")
    with pytest.raises(InvalidArgument):
        app.add_webhook("https://example.com/x", ["job.exploded"], project="p1")
    assert app.webhooks() == []


def test_subscriptions_are_scoped_to_projects(hooks):
    mine = hooks.add_webhook(URL, ["job.failed"], project="p1", projects=["p1"])
    every = hooks.add_webhook(URL, list(KINDS), description="ops")
    assert mine.secret.startswith("whsec_") and mine.secret != every.secret
    assert {s.id for s in hooks.webhooks()} == {mine.id, every.id}
    assert [s.id for s in hooks.webhooks(projects=["p1"])] == [mine.id]
    assert hooks.webhooks(projects=["p2"]) == []
    with pytest.raises(InvalidArgument):  # every project: an admin's
        hooks.add_webhook(URL, ["job.failed"], projects=["p1"])
    with pytest.raises(InvalidArgument):
        hooks.add_webhook(URL, ["job.failed"], project="p2", projects=["p1"])
    with pytest.raises(WebhookNotFound):
        hooks.delete_webhook(every.id, projects=["p1"])
    assert hooks.delete_webhook(every.id).id == every.id
    with pytest.raises(WebhookNotFound):
        hooks.get_webhook(every.id)
    assert "secret" not in hooks.get_webhook(mine.id).to_dict()


def test_each_event_becomes_one_delivery_per_matching_subscription(hooks, clock):
    before = run(hooks, "ok")                    # before any subscription: never sent
    clock.advance(1)
    p1 = hooks.add_webhook(URL, ["job.succeeded", "job.failed"], project="p1")
    every = hooks.add_webhook(URL, ["job.failed", "budget.threshold_crossed",
                                    "job.waiting_signal"])
    clock.advance(1)
    good = run(hooks, "ok")
    bad = run(hooks, "boom")
    other = run(hooks, "boom", project="p2")
    asking = run(hooks, "asks", project="p2")
    hooks.store.append_event(good.id, "budget_threshold",
                             {"scope": "project", "project": "p1", "metric": "cost",
                              "threshold": 0.8, "limit": "10", "used": "8.1",
                              "period_start": None})
    assert hooks.webhook_step() == 6
    assert hooks.webhook_step() == 0            # the cursor moved: nothing twice
    made = {(d.subscription_id, d.kind, d.body["data"]["job"]["id"])
            for d in hooks.deliveries(limit=100)}
    assert made == {(p1.id, "job.succeeded", good.id), (p1.id, "job.failed", bad.id),
                    (every.id, "job.failed", bad.id), (every.id, "job.failed", other.id),
                    (every.id, "job.waiting_signal", asking.id),
                    (every.id, "budget.threshold_crossed", good.id)}
    assert before.id not in {k[2] for k in made}
    failed = next(d for d in hooks.deliveries(webhook=p1.id) if d.kind == "job.failed")
    assert failed.body["type"] == "job.failed" and failed.state == "queued"
    assert failed.body["data"]["job"]["error_code"] == "unhandled_error"
    job = hooks.get(failed.job_id)
    assert (job.type, job.queue, job.project, job.max_attempts) == (
        DELIVERY_TYPE, "webhooks", "p1", 2)
    assert job.idempotency_key == f"webhook:{failed.id}:1"
    assert [d.id for d in hooks.deliveries(webhook=p1.id, projects=["p2"])] == []
    # a scoped read sees the deliveries of its projects' subscriptions, never an admin's
    assert {d.subscription_id for d in hooks.deliveries(limit=100, projects=["p1", "p2"])} == {
        p1.id}
    with pytest.raises(WebhookNotFound):
        hooks.delivery(delivery_id_of(hooks, every.id), projects=["p1", "p2"])


def test_the_first_subscription_starts_from_the_newest_event(hooks, clock):
    run(hooks, "boom")
    assert hooks.webhook_step() == 0
    hooks.add_webhook(URL, ["job.failed"], project="p1")
    assert hooks.webhook_step() == 0            # the old failure is not replayed
    clock.advance(1)
    run(hooks, "boom")
    assert hooks.webhook_step() == 1


def test_a_schedule_that_skipped_ticks_is_reported_once(hooks, clock):
    sub = hooks.add_webhook(URL, ["schedule.missed"], project="p1")
    hooks.schedule("minutely", cron="* * * * *", type="ok", project="p1", catch_up="latest")
    t0 = clock.time()
    assert len(hooks.run_schedules(now=t0 + 60)) == 1     # on time: nothing missed
    assert hooks.webhook_step() == 0
    assert len(hooks.run_schedules(now=t0 + 60 * 5)) == 1  # ticks 2, 3, 4 skipped
    assert hooks.webhook_step() == 1
    assert hooks.webhook_step() == 0
    (d,) = hooks.deliveries(webhook=sub.id)
    assert d.kind == "schedule.missed"
    assert d.body["data"]["schedule"] == "minutely" and d.body["data"]["missed"] == 3


def deliver_once(app):
    """One delivery job attempt, by a worker that serves only deliveries."""
    app.worker(concurrency=1, queues=["webhooks"], webhook_interval=None,
               schedule_interval=None, poll_interval=0.01).run(install_signals=False,
                                                               max_jobs=1)


def test_a_dead_delivery_is_visible_and_can_be_sent_again(hooks, clock):
    """Nobody listens at the URL: each try is an attempt with its error; after the last
    (max_attempts=2) the delivery is dead; its own failure makes no delivery; a re-send is
    the same id and body with a fresh job."""
    hooks.add_webhook(URL, ["job.failed"], project="p1")
    run(hooks, "boom")
    hooks.webhook_step()
    (d,) = hooks.deliveries()
    with pytest.raises(JobStateError):          # still pending
        hooks.resend(d.id)
    deliver_once(hooks)
    assert hooks.delivery(d.id).state == "retry_wait"
    clock.advance(3600)
    deliver_once(hooks)
    dead = hooks.delivery(d.id)
    assert dead.state == "failed" and dead.dead
    assert hooks.deliveries(state="failed")[0].id == d.id
    assert [(a.n, a.status, a.job_id) for a in dead.attempts] == [(1, None, d.job_id),
                                                                   (2, None, d.job_id)]
    assert all("ConnectError" in (a.error or "") for a in dead.attempts)
    assert hooks.webhook_step() == 0            # a delivery's own failure is not an event
    again = hooks.resend(d.id)
    assert (again.id, again.sends, again.state) == (d.id, 2, "queued")
    assert again.job_id != d.job_id and again.body == d.body
    assert hooks.get(again.job_id).idempotency_key == f"webhook:{d.id}:2"
    with pytest.raises(WebhookNotFound):
        hooks.resend(d.id, projects=["p2"])


def test_a_backlog_larger_than_a_page_drains_in_one_call(hooks, clock, monkeypatch):
    """A step takes a page of events; the facade's call repeats steps while more wait."""
    monkeypatch.setattr(webhooks_facade, "OUTBOX_PAGE", 10)
    hooks.add_webhook(URL, ["budget.threshold_crossed"], project="p1")
    clock.advance(1)
    job = hooks.submit("ok", {}, project="p1")
    for n in range(25):
        hooks.store.append_event(job.id, "budget_threshold", {"threshold": n})
    first = hooks.store.webhook_step(limit=10)      # 10 events: "submitted" and 9
    assert first.made == 9 and first.more
    assert hooks.webhook_step() == 16
    assert hooks.webhook_step() == 0
    assert len(hooks.deliveries(limit=100)) == 25


def test_a_prune_takes_deliveries_whose_job_it_deleted(hooks, clock):
    hooks.add_webhook(URL, ["job.failed"], project="p1")
    clock.advance(1)
    run(hooks, "boom")
    hooks.webhook_step()
    (d,) = hooks.deliveries()
    hooks.store.record_webhook_attempt(d.id, d.job_id, status=500, error="x", duration_ms=1.0)
    clock.advance(60)
    hooks.prune(older_than_s=30)                    # the delivery job is still queued
    assert hooks.delivery(d.id).attempts
    hooks.cancel(d.job_id)
    clock.advance(60)
    hooks.prune(older_than_s=30)
    assert hooks.deliveries() == []
    with pytest.raises(WebhookNotFound):
        hooks.delivery(d.id)


def test_concurrent_outbox_steps_make_each_delivery_once(hooks, clock):
    """Two threads step the outbox at once, a page of 7 each time, over 40 events: each
    event becomes exactly one delivery and one delivery job."""
    import threading

    hooks.add_webhook(URL, ["budget.threshold_crossed"], project="p1")
    clock.advance(1)
    job = hooks.submit("ok", {}, project="p1")
    for n in range(40):
        hooks.store.append_event(job.id, "budget_threshold", {"threshold": n})
    made: list[int] = []

    def drain() -> None:
        for _ in range(200):
            step = hooks.store.webhook_step(limit=7)
            made.append(step.made)
            if not step.more and step.made == 0:
                return

    threads = [threading.Thread(target=drain) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(made) == 40
    assert len({d.id for d in hooks.deliveries(limit=100)}) == 40
    assert len(hooks.list(type="tether.webhook", limit=100)) == 40


def test_making_a_worker_leaves_an_app_without_types_unstrict(app):
    """The worker registers the delivery type; the app still accepts any type as before."""
    app.worker(webhook_interval=None, schedule_interval=None)
    assert app.submit("anything", {}).type == "anything"
