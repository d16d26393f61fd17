"""Webhook signatures (Standard Webhooks), the mapping of job events to public kinds, and
where a webhook may be sent."""

from __future__ import annotations

import pytest

from tether.core.webhooks import (
    DELIVERY_TYPE, KINDS, check_kinds, delivery_id, headers, new_secret, public_kind,
    signature, verify,
)
from tether.errors import InvalidArgument, WebhookTargetRefused
from tether.facade.webhook_delivery import WebhookSettings

# The published Standard Webhooks example (www.standardwebhooks.com and its libraries'
# tests): a value we did not compute ourselves.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG = "msg_p5jXN8AQM9LWM0D4loKWxJek"
STAMP = 1614265330
BODY = b'{"test": 2432232314}'
SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_signature_matches_the_standard_webhooks_example():
    assert signature(SECRET, MSG, STAMP, BODY) == SIG
    sent = headers(SECRET, MSG, STAMP, BODY)
    assert (sent["webhook-id"], sent["webhook-timestamp"], sent["webhook-signature"]) == (
        MSG, str(STAMP), SIG)


def test_verify_refuses_a_replay_a_changed_body_and_another_secret():
    sent = headers(SECRET, MSG, STAMP, BODY)
    assert verify(SECRET, sent, BODY, now=STAMP + 299)
    assert not verify(SECRET, sent, BODY, now=STAMP + 301)        # too old: a replay
    assert not verify(SECRET, sent, BODY, now=STAMP - 301)
    assert not verify(SECRET, sent, BODY + b" ", now=STAMP)
    assert not verify(new_secret(), sent, BODY, now=STAMP)
    assert not verify(SECRET, {**sent, "webhook-id": "msg_other"}, BODY, now=STAMP)
    rotated = {**sent, "webhook-signature": "v1,bm90IGl0 " + SIG}   # several: any may match
    assert verify(SECRET, rotated, BODY, now=STAMP)
    assert not verify(SECRET, {}, BODY, now=STAMP)


def test_delivery_ids_are_stable_per_subscription_and_event():
    assert delivery_id("sub_a", "event:1:4") == delivery_id("sub_a", "event:1:4")
    assert delivery_id("sub_a", "event:1:4") != delivery_id("sub_b", "event:1:4")
    assert delivery_id("sub_a", "event:1:4").startswith("msg_")


@pytest.mark.parametrize(("kind", "to_state", "data", "job_type", "public"), [
    ("succeeded", "succeeded", {}, "t", "job.succeeded"),
    ("failed", "failed", {}, "t", "job.failed"),
    ("lease_expired", "failed", {}, "t", "job.failed"),
    ("budget_exhausted", "paused", {}, "t", "job.budget_paused"),
    ("pause", "paused", {}, "t", None),
    ("waiting", "waiting", {"wait": "signal"}, "t", "job.waiting_signal"),
    ("waiting", "waiting", {"wait": "timer"}, "t", None),
    ("budget_threshold", None, {"threshold": 0.5}, "t", "budget.threshold_crossed"),
    ("running", "running", {}, "t", None),
    ("failed", "failed", {}, DELIVERY_TYPE, None),
])
def test_job_events_map_to_public_kinds(kind, to_state, data, job_type, public):
    assert public_kind(kind, to_state, data, job_type) == public


def test_kinds_are_checked():
    assert check_kinds(["job.failed", "job.failed", "schedule.missed"]) == (
        "job.failed", "schedule.missed")
    assert set(KINDS) >= {"job.succeeded", "budget.threshold_crossed"}
    for bad in ([], ["job.done"]):
        with pytest.raises(InvalidArgument):
            check_kinds(bad)


def dns(table):
    return lambda host, port: table[host]


def test_every_address_of_a_host_is_checked():
    s = WebhookSettings()
    public = dns({"hooks.example.com": ["93.184.216.34"],
                  "mixed.example.com": ["93.184.216.34", "10.0.0.7"],
                  "mapped.example.com": ["::ffff:127.0.0.1"],
                  "meta.example.com": ["169.254.169.254"], "six.example.com": ["fd00::1"]})
    assert s.check("https://hooks.example.com/x", resolve=public) == ["93.184.216.34"]
    for host in ("mixed", "mapped", "meta", "six"):
        with pytest.raises(WebhookTargetRefused):
            s.check(f"https://{host}.example.com/x", resolve=public)
    allowed = WebhookSettings(allow_private=True)
    assert allowed.check("http://mixed.example.com/x", resolve=public) == [
        "93.184.216.34", "10.0.0.7"]


def test_an_allow_list_limits_the_hosts():
    s = WebhookSettings(allow_hosts=("hooks.example.com", "*.corp.example"))
    resolve = dns({"hooks.example.com": ["93.184.216.34"], "a.corp.example": ["93.184.216.35"],
                   "evil.example.com": ["93.184.216.36"]})
    s.check("https://hooks.example.com/x", resolve=resolve)
    s.check("https://a.corp.example/x", resolve=resolve)
    with pytest.raises(WebhookTargetRefused):
        s.check("https://evil.example.com/x", resolve=resolve)
    with pytest.raises(InvalidArgument):
        s.check("https://user:pw@hooks.example.com/x", resolve=resolve)


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("TETHER_WEBHOOK_ALLOW_PRIVATE", "1")
    monkeypatch.setenv("TETHER_WEBHOOK_ALLOW_HOSTS", "A.example, b.example")
    s = WebhookSettings.from_env()
    assert s.allow_private and s.allow_hosts == ("a.example", "b.example")
