"""``tether webhook add|list|delete|deliveries|delivery|resend`` on both backends (in
process, the same code as the console script), and once as a real subprocess."""

from __future__ import annotations

import pytest

from tether import Tether, WebhookSettings
from tests.procs import wait_until
from tests.e2e.api_harness import migrate_database
from tests.e2e.clitools import one_error_line, run_main, tether

URL = "http://127.0.0.1:9/hook"


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("TETHER_APP", raising=False)
    monkeypatch.delenv("TETHER_WEBHOOK_ALLOW_PRIVATE", raising=False)


def cli(capsys, db, *args):
    return run_main(capsys, *args, db=db)


def one_delivery(database_url: str) -> str:
    """A threshold event on a job of p1, made into a delivery by one outbox step."""
    app = Tether(database_url, webhooks=WebhookSettings(allow_private=True))
    try:
        job = app.submit("t", {}, project="p1")
        app.store.append_event(job.id, "budget_threshold", {"threshold": 0.8})
        assert wait_until(app.webhook_step, what="the outbox step") == 1
        return app.deliveries()[0].id
    finally:
        app.close()


def test_subscribe_list_see_deliveries_resend_delete(capsys, database_url, monkeypatch):
    migrate_database(database_url)
    refused = cli(capsys, database_url, "webhook", "add", URL, "--kind", "job.failed")
    assert refused.code == 2
    assert "loopback" in one_error_line(refused, "webhook_target_refused")

    monkeypatch.setenv("TETHER_WEBHOOK_ALLOW_PRIVATE", "1")
    r = cli(capsys, database_url, "webhook", "add", URL, "--kind", "budget.threshold_crossed",
            "--kind", "job.failed", "--project", "p1", "--description", "ops", "--json")
    assert r.code == 0, r
    sub = r.json()
    assert sub["secret"].startswith("whsec_") and sub["kinds"] == [
        "budget.threshold_crossed", "job.failed"]
    text = cli(capsys, database_url, "webhook", "add", URL, "--kind", "job.failed")
    assert "signing secret (shown once): whsec_" in text.out

    listed = cli(capsys, database_url, "webhook", "list", "--project", "p1", "--json").json()
    assert [s["id"] for s in listed] == [sub["id"]] and "secret" not in listed[0]
    table = cli(capsys, database_url, "webhook", "list").out
    assert sub["id"] in table and "(every)" in table

    delivery = one_delivery(database_url)
    rows = cli(capsys, database_url, "webhook", "deliveries", "--webhook", sub["id"], "--json")
    assert [d["id"] for d in rows.json()] == [delivery]
    assert delivery in cli(capsys, database_url, "webhook", "deliveries").out
    shown = cli(capsys, database_url, "webhook", "delivery", delivery, "--json").json()
    assert shown["kind"] == "budget.threshold_crossed" and shown["attempts"] == []
    busy = cli(capsys, database_url, "webhook", "resend", delivery)
    assert busy.code == 2 and one_error_line(busy, "invalid_transition")
    assert cli(capsys, database_url, "job", "cancel", str(shown["job_id"])).code == 0
    again = cli(capsys, database_url, "webhook", "resend", delivery)
    assert again.code == 0 and "sent 2 time(s)" in again.out

    assert cli(capsys, database_url, "webhook", "delete", sub["id"]).code == 0
    gone = cli(capsys, database_url, "webhook", "delete", sub["id"])
    assert gone.code == 3 and one_error_line(gone, "webhook_not_found")


def test_the_console_script_lists_webhooks(sqlite_url):
    migrate_database(sqlite_url)
    r = tether("webhook", "list", db=sqlite_url)
    assert r.code == 0 and "no webhooks" in r.out
