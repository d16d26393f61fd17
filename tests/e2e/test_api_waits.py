"""``POST /jobs?wait=``: waiters wake on the store's notification, and a token's waits are capped.

The server's stream hub, which ``?wait=`` rides, re-checks on its own only every 60 s here
(``TETHER_STREAM_POLL_S``, ``TETHER_STREAM_KEEPALIVE_S``), so a waiter that returns within a
second or two of its job finishing was woken by the store's signal (LISTEN/NOTIFY on
PostgreSQL, ``data_version`` on SQLite), not by polling.
No worker runs: jobs stay queued until the test cancels them, which finishes them at once.
One server per backend; each test uses tokens of its own (the cap, 2 waits, is per token).
"""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest

from tether import Tether
from tether.api.stream_hub import StreamHub
from tether.api.wait_hub import WaitHub
from tests.e2e.api_harness import BACKENDS, backend_url, run_server

CAP = 2


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"api-waits-{request.param}")
    url = backend_url(request.param, d)
    local = Tether(url)
    env = {"TETHER_STREAM_POLL_S": "60", "TETHER_STREAM_KEEPALIVE_S": "60",
           "TETHER_MAX_WAITS_PER_TOKEN": str(CAP)}
    with run_server(url, d, env=env) as srv:
        yield SimpleNamespace(srv=srv, local=local)
    local.close()


def _token(api, project: str) -> str:
    return api.local.store.create_token(name=project, projects=[project], admin=False)[1]


def _wait_in_thread(client, out: dict, **body) -> threading.Thread:
    def go():
        t0 = time.monotonic()
        out["response"] = client.post("/api/v1/jobs", params={"wait": 30},
                                      json={"type": "t", **body})
        out["returned_at"] = time.monotonic()
        out["took"] = out["returned_at"] - t0
    thread = threading.Thread(target=go)
    thread.start()
    return thread


def _queued(api, project: str, n: int, timeout: float = 10.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = api.local.list(project=project, state="queued")
        if len(jobs) >= n:
            return jobs
        time.sleep(0.02)
    raise AssertionError(f"{n} jobs were not submitted")


def _waiters(api, project: str, n: int):
    """``n`` parked waits from tokens of ``project`` (at most CAP per token)."""
    tokens = [_token(api, project) for _ in range((n + CAP - 1) // CAP)]
    clients = [api.srv.client(tokens[i // CAP]) for i in range(n)]
    outs: list[dict] = [{} for _ in range(n)]
    threads = [_wait_in_thread(cl, o, payload={"i": i})
               for i, (cl, o) in enumerate(zip(clients, outs))]
    return clients, outs, threads


def test_a_waiter_returns_as_soon_as_its_job_finishes(api):
    clients, (out,), threads = _waiters(api, "one", 1)
    (job,) = _queued(api, "one", 1)
    time.sleep(0.5)  # the waiter is parked well before the job finishes
    assert "response" not in out
    cancelled_at = time.monotonic()
    assert clients[0].post(f"/api/v1/jobs/{job.id}/cancel").status_code == 200
    threads[0].join(10)
    r = out["response"]
    assert r.status_code == 201 and r.json()["state"] == "cancelled", r.text
    assert out["returned_at"] - cancelled_at < 2.0, "woken by the notification, not a poll"
    assert out["took"] > 0.5
    clients[0].close()


def test_many_waiters_on_many_jobs_all_wake(api):
    clients, outs, threads = _waiters(api, "many", 10)
    jobs = _queued(api, "many", 10)
    time.sleep(0.3)
    assert not any("response" in o for o in outs)
    cancelled_at = time.monotonic()
    with api.srv.client(_token(api, "many")) as c:
        for job in jobs:
            c.post(f"/api/v1/jobs/{job.id}/cancel")
    for thread, cl in zip(threads, clients):
        thread.join(10)
        cl.close()
    assert sorted(o["response"].json()["id"] for o in outs) == sorted(j.id for j in jobs)
    assert all(o["response"].json()["state"] == "cancelled" for o in outs)
    assert max(o["returned_at"] for o in outs) - cancelled_at < 3.0


def test_waits_past_the_tokens_cap_are_429_with_retry_after(api):
    token = _token(api, "capped")
    clients = [api.srv.client(token) for _ in range(CAP)]
    outs: list[dict] = [{} for _ in range(CAP)]
    threads = [_wait_in_thread(cl, o, payload={"i": i})
               for i, (cl, o) in enumerate(zip(clients, outs))]
    jobs = _queued(api, "capped", CAP)
    time.sleep(0.3)
    with api.srv.client(token) as c:
        r = c.post("/api/v1/jobs", params={"wait": 5}, json={"type": "t", "payload": {"i": 9}})
        assert r.status_code == 429 and r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "too_many_waits" and r.json()["limit"] == CAP
        assert 1 <= int(r.headers["Retry-After"]) <= 30
        assert len(api.local.list(project="capped")) == CAP, "a refused wait submits nothing"
        with api.srv.client(_token(api, "capped")) as another:
            r = another.post("/api/v1/jobs", params={"wait": 0.1}, json={"type": "t"})
            assert r.status_code == 202, "the cap is per token"
        assert c.post("/api/v1/jobs", json={"type": "t", "payload": {"i": 9}}).status_code == 201
        for job in jobs:
            c.post(f"/api/v1/jobs/{job.id}/cancel")
        for thread, cl in zip(threads, clients):
            thread.join(10)
            cl.close()
        assert [o["response"].status_code for o in outs] == [201] * CAP
        r = c.post("/api/v1/jobs", params={"wait": 0.2}, json={"type": "t", "payload": {"i": 10}})
        assert r.status_code == 202, "slots are given back when the waits end"


def test_an_unfinished_job_answers_202_when_the_wait_is_up(api):
    with api.srv.client(_token(api, "slow")) as c:
        t0 = time.monotonic()
        r = c.post("/api/v1/jobs", params={"wait": 0.3}, json={"type": "t"})
        assert r.status_code == 202 and r.json()["state"] == "queued"
        assert 0.3 <= time.monotonic() - t0 < 5


def test_parked_waiters_read_nothing_until_a_job_finishes(database_url):
    """The hub in process: twenty parked waits cost no re-read in a quiet second (the old
    ``?wait`` read every job every 50 ms); one finish wakes exactly its waiter."""
    app = Tether(database_url)
    jobs = [app.submit("t", {"i": i}) for i in range(20)]
    streams = StreamHub(app, poll_s=60, keepalive_s=60)
    hub = WaitHub(app, streams=streams)

    async def scenario():
        tasks = [asyncio.create_task(hub.wait(job, 30)) for job in jobs]
        await asyncio.sleep(1.0)
        quiet = streams.checks
        await asyncio.to_thread(app.cancel, jobs[0].id)
        first = await asyncio.wait_for(tasks[0], 5)
        others_pending = sum(not t.done() for t in tasks[1:])
        for job in jobs[1:]:
            await asyncio.to_thread(app.cancel, job.id)
        rest = await asyncio.wait_for(asyncio.gather(*tasks[1:]), 5)
        return quiet, first, others_pending, rest

    try:
        quiet, first, others_pending, rest = asyncio.run(scenario())
    finally:
        streams.close()
        app.close()
    assert quiet <= 1, "only the check when the watcher starts"
    assert first.id == jobs[0].id and first.state == "cancelled"
    assert others_pending == 19
    assert [j.state for j in rest] == ["cancelled"] * 19
