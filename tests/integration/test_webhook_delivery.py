"""Webhooks over real HTTP, on both backends: real worker processes deliver to a real
receiver process (tests/webhook_receiver.py) on loopback, which tests/apps/webhooks.py
allows explicitly.

* A worker SIGKILLed while its delivery is in flight: another worker delivers it again,
  with the same ``webhook-id`` and body (at least once; the receiver deduplicates).
* A receiver that is down for a while: every try fails and is recorded; once it is up,
  every delivery arrives, nothing lost.
* Every request the receiver got carries a valid signature over id, timestamp and body."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tether import Tether
from tether.core.webhooks import verify
from tether.facade.webhook_delivery import WebhookSettings
from tests.procs import CHILD_PYTHONPATH, ROOT, free_port, start_worker, stop, wait_http, wait_until

pytestmark = pytest.mark.slow

APP = "tests.apps.webhooks:app"


def start_receiver(port: int, log: Path, *, hold_first: float = 0.0,
                   out: Path | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "tests.webhook_receiver", str(port), str(log),
           "--hold-first", str(hold_first)]
    sink = open(out, "ab") if out else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": CHILD_PYTHONPATH},
                            stdout=sink, stderr=sink)
    wait_http(f"http://127.0.0.1:{port}/", proc, log=out)
    return proc


def received(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def signed_correctly(secret: str, request: dict) -> bool:
    """The check a receiver makes, twice: the library's ``verify`` and the Standard
    Webhooks recipe written out here by hand."""
    h = {k.lower(): v for k, v in request["headers"].items()}
    body = request["body"].encode()
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{h['webhook-id']}.{h['webhook-timestamp']}.".encode() + body,
                   hashlib.sha256).digest()
    by_hand = h["webhook-signature"] == "v1," + base64.b64encode(mac).decode()
    return by_hand and verify(secret, h, body, now=time.time())


def test_a_worker_killed_mid_delivery_delivers_again_with_the_same_id(database_url, tmp_path):
    port, log, out = free_port(), tmp_path / "received.jsonl", tmp_path / "procs.log"
    receiver = start_receiver(port, log, hold_first=120, out=out)
    app = Tether(database_url, webhooks=WebhookSettings(allow_private=True))
    workers: list[subprocess.Popen] = []
    try:
        sub = app.add_webhook(f"http://127.0.0.1:{port}/hook", ["job.failed"], project="p1")
        app.submit("boom", {"n": 1}, project="p1")
        workers.append(start_worker(database_url, app=APP, lease_ttl=2, log=out))
        wait_until(lambda: received(log), timeout=60, what="the first delivery to arrive",
                   watch=[receiver, *workers], log=out)
        (delivery,) = app.deliveries()
        assert app.delivery(delivery.id).state == "running"
        workers[0].send_signal(signal.SIGKILL)
        workers[0].wait(10)
        workers.append(start_worker(database_url, app=APP, lease_ttl=2, log=out))
        wait_until(lambda: app.delivery(delivery.id).state == "succeeded", timeout=60,
                   what="the delivery to succeed", watch=[receiver, workers[1]], log=out)
        requests = received(log)
        assert len(requests) >= 2
        assert {r["headers"]["webhook-id"] for r in requests} == {delivery.id}
        assert len({r["body"] for r in requests}) == 1
        assert json.loads(requests[0]["body"])["type"] == "job.failed"
        assert all(signed_correctly(sub.secret, r) for r in requests)
        assert app.delivery(delivery.id).attempts[-1].status == 200
    finally:
        for proc in workers:
            stop(proc)
        receiver.kill()
        receiver.wait()
        app.close()


def test_a_receiver_down_for_a_while_loses_nothing(database_url, tmp_path):
    port, log, out = free_port(), tmp_path / "received.jsonl", tmp_path / "procs.log"
    app = Tether(database_url, webhooks=WebhookSettings(allow_private=True))
    receiver = None
    worker = None
    try:
        sub = app.add_webhook(f"http://127.0.0.1:{port}/hook", ["job.failed", "job.succeeded"],
                              project="p1")
        other = app.add_webhook(f"http://127.0.0.1:{port}/other", ["job.failed"],
                                project="p2")
        for n in range(3):
            app.submit("boom", {"n": n}, project="p1")
            app.submit("fine", {"n": n}, project="p1")
        app.submit("boom", {"n": 9}, project="p2")
        worker = start_worker(database_url, app=APP, lease_ttl=5, log=out)

        def all_tried_twice() -> bool:
            found = [app.delivery(d.id) for d in app.deliveries()]
            return len(found) == 7 and all(len(d.attempts) >= 2 for d in found)
        wait_until(all_tried_twice, timeout=60, what="every delivery to fail twice",
                   watch=worker, log=out)
        down = [app.delivery(d.id) for d in app.deliveries()]
        assert all(a.status is None and "ConnectError" in (a.error or "")
                   for d in down for a in d.attempts)
        assert not any(d.state in ("succeeded", "failed") for d in down)
        receiver = start_receiver(port, log, out=out)
        wait_until(lambda: all(d.state == "succeeded" for d in app.deliveries()), timeout=60,
                   what="every delivery to arrive", watch=[worker, receiver], log=out)
        requests = received(log)
        by_id = {r["headers"]["webhook-id"]: r for r in requests}
        assert set(by_id) == {d.id for d in down}
        kinds = sorted(json.loads(r["body"])["type"] for r in requests
                       if r["headers"]["webhook-id"] in {d.id for d in down
                                                         if d.subscription_id == sub.id})
        assert kinds == ["job.failed"] * 3 + ["job.succeeded"] * 3
        secrets = {sub.id: sub.secret, other.id: other.secret}
        assert all(signed_correctly(secrets[d.subscription_id], by_id[d.id]) for d in down)
    finally:
        if worker is not None:
            stop(worker)
        if receiver is not None:
            receiver.kill()
            receiver.wait()
        app.close()
