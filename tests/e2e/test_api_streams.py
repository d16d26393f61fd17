"""Live event streams (SSE) against a real uvicorn server and a real worker process.

A ``ticker`` job appends ``tick`` events and, after ``gate_after`` of them, waits for a gate
file: a client disconnects while the job is provably mid-way, the gate opens, and the client
reconnects with ``Last-Event-ID``. What it got over both connections must be exactly the job's
log (``GET /jobs/{id}/events``): every seq once, in order.

On SQLite the server's fallback re-read runs only every 60 s (``TETHER_STREAM_POLL_S``), so
events arriving within seconds were delivered on the store's wake-up (``data_version``), not by
polling. On PostgreSQL the ticks carry no NOTIFY (docs/observability.md), so the server reads on
its 1 s interval between notifications.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from tether import Tether
from tests.e2e.api_harness import BACKENDS, backend_url, run_server
from tests.e2e.sse import Stream
from tests.procs import start_worker, stop, wait_until

CAP = 3
RECHECK_S = 0.2
TICKS = 12
GATE_AFTER = 5


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"api-streams-{request.param}")
    url = backend_url(request.param, d)
    local = Tether(url)
    local.store  # noqa: B018 - migrate before the worker and server start
    env = {"TETHER_STREAM_POLL_S": "60" if request.param == "sqlite" else "1",
           "TETHER_STREAM_KEEPALIVE_S": "1", "TETHER_MAX_STREAMS_PER_TOKEN": str(CAP),
           "TETHER_STREAM_RECHECK_S": str(RECHECK_S)}
    worker = start_worker(url, log=d / "worker.log")
    try:
        with run_server(url, d, env=env) as srv:
            yield SimpleNamespace(srv=srv, local=local, dir=d, backend=request.param)
    finally:
        stop(worker)
        local.close()


def _token(api, *projects: str) -> str:
    return api.local.store.create_token(name=projects[0], projects=list(projects),
                                        admin=False)[1]


def _token_id(secret: str) -> str:
    return secret.split("_")[1]  # tth_<id>_<random> (tether/tokens.py)


def _submit(client, project: str, gate, ticks: int = TICKS) -> int:
    r = client.post("/api/v1/jobs", json={
        "type": "ticker", "project": project,
        "payload": {"ticks": ticks, "gate_after": GATE_AFTER, "gate": str(gate)}})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _log(client, job_id: int) -> list[dict]:
    r = client.get(f"/api/v1/jobs/{job_id}/events", params={"limit": 1000})
    assert r.status_code == 200 and not r.json()["has_more"]
    return r.json()["items"]


def _until(stream: Stream, job_id: int, done) -> list:  # noqa: ANN001
    """Events of ``job_id`` read from ``stream`` until ``done(message)``."""
    got = []
    while True:
        msg = stream.next_event()
        assert msg is not None, "the stream ended early"
        if msg.data["job_id"] == job_id:
            got.append(msg)
            if done(msg):
                return got


def test_every_event_in_order_across_a_reconnect_on_both_streams(api):
    project = f"sse-{api.backend}"
    gate = api.dir / f"gate-{project}"
    client = api.srv.client(_token(api, project))
    with Stream(client, "/api/v1/events/stream") as feed:
        assert feed.response.headers["content-type"].startswith("text/event-stream")
        assert feed.first().retry == 2000  # subscribed: everything from here on is sent
        job_id = _submit(client, project, gate)

        # the job's own stream, opened before the worker can have done much
        with Stream(client, f"/api/v1/jobs/{job_id}/events/stream") as one:
            first = _until(one, job_id, lambda m: m.event == "tick" and m.data["data"]["n"]
                           == GATE_AFTER)
        assert api.local.get(job_id).state == "running"  # it waits at the gate: mid-way
        gate.touch()
        with Stream(client, f"/api/v1/jobs/{job_id}/events/stream",
                    headers={"Last-Event-ID": first[-1].id}) as again:
            rest = []
            while (msg := again.next_event()) is not None:  # ends by itself: terminal
                rest.append(msg)
        log = _log(client, job_id)
        assert log[-1]["kind"] == "succeeded" and len(log) >= TICKS + 4
        assert [m.data for m in first + rest] == log
        assert [int(m.id) for m in first + rest] == list(range(1, len(log) + 1))
        assert [m.event for m in first + rest] == [e["kind"] for e in log]

        # the feed, connected before the submit, saw the same log; resume it mid-way
        seen = _until(feed, job_id, lambda m: m.event == "succeeded")
        assert [m.data for m in seen] == log
    cut = next(i for i, m in enumerate(seen) if m.event == "tick")
    with Stream(client, "/api/v1/events/stream", headers={"Last-Event-ID": seen[cut].id}) as re:
        resumed = _until(re, job_id, lambda m: m.event == "succeeded")
    assert [m.data for m in resumed] == log[cut + 1:]
    assert [m.id for m in resumed] == [m.id for m in seen[cut + 1:]]


def test_a_token_sees_only_its_projects(api):
    mine, theirs = f"mine-{api.backend}", f"theirs-{api.backend}"
    client = api.srv.client(_token(api, mine))
    other = api.srv.client(_token(api, theirs))
    gate = api.dir / f"gate-{mine}"
    gate.touch()
    their_job = _submit(other, theirs, gate, ticks=1)
    r = client.get(f"/api/v1/jobs/{their_job}/events/stream")
    assert r.status_code == 404 and r.json()["code"] == "job_not_found"
    r = client.get("/api/v1/events/stream", params={"project": theirs})
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    with Stream(client, "/api/v1/events/stream") as feed:
        feed.first()
        their_next = _submit(other, theirs, gate, ticks=1)
        my_job = _submit(client, mine, gate, ticks=1)
        got = _until(feed, my_job, lambda m: m.event == "succeeded")
        assert {m.data["job_id"] for m in got} == {my_job}
    assert wait_until(lambda: api.local.get(their_next).terminal, what="their job")
    with Stream(client, "/api/v1/events/stream",
                params={"after": got[0].id}) as later:  # resumes; still only mine
        assert later.next_event().data["job_id"] == my_job
        assert later.next_event().data["job_id"] == my_job


def test_a_token_holds_at_most_cap_streams_and_bad_cursors_are_refused(api):
    project = f"cap-{api.backend}"
    client = api.srv.client(_token(api, project))
    gate = api.dir / f"gate-{project}"
    job_id = _submit(client, project, gate)  # waits at its gate: its stream stays open
    streams = [Stream(client, f"/api/v1/jobs/{job_id}/events/stream") for _ in range(CAP)]
    try:
        for s in streams:
            assert s.response.status_code == 200
            s.first()
        r = client.get("/api/v1/events/stream")
        assert r.status_code == 429 and r.json()["code"] == "too_many_streams"
        assert r.json()["limit"] == CAP and int(r.headers["Retry-After"]) >= 1
        other = api.srv.client(_token(api, project))  # the cap is per token
        with Stream(other, "/api/v1/events/stream") as ok:
            assert ok.response.status_code == 200
        # an idle stream sends keep-alives (every 1 s here) and nothing else
        quiet = streams[0]
        _until(quiet, job_id, lambda m: m.event == "tick" and m.data["data"]["n"] == GATE_AFTER)
        deadline = time.monotonic() + 2.5
        blocks = []
        while time.monotonic() < deadline:
            blocks.append(next(quiet._it))
        assert blocks and all(b.event is None and "keep-alive" in b.comments for b in blocks)
    finally:
        streams.pop(0).close()

    def opens() -> bool:
        with Stream(client, "/api/v1/events/stream") as s:
            return s.response.status_code == 200

    wait_until(opens, what="the slot freed by a disconnect")
    for s in streams:
        s.close()
    gate.touch()
    for bad in ("x", "-1", "1.5"):
        r = client.get(f"/api/v1/jobs/{job_id}/events/stream", headers={"Last-Event-ID": bad})
        assert r.status_code == 422 and r.json()["argument"] == "Last-Event-ID", bad
    r = client.get("/api/v1/events/stream", params={"after": "1_2"})
    assert r.status_code == 422 and r.json()["argument"] == "after"


def test_a_job_stream_takes_the_seqs_the_events_route_takes(api):
    project = f"bounds-{api.backend}"
    client = api.srv.client(_token(api, project))
    gate = api.dir / f"gate-{project}"
    gate.touch()
    job_id = _submit(client, project, gate, ticks=1)
    assert wait_until(lambda: api.local.get(job_id).terminal, what="the job")
    top = 2**63 - 1
    for where in ({"params": {"after": top}}, {"headers": {"Last-Event-ID": str(top)}}):
        assert client.get(f"/api/v1/jobs/{job_id}/events", params={"after": top}).json()[
            "items"] == []
        with Stream(client, f"/api/v1/jobs/{job_id}/events/stream", **where) as s:
            assert s.response.status_code == 200, where
            assert s.next_event() is None  # terminal, nothing after that seq: it ends
    r = client.get(f"/api/v1/jobs/{job_id}/events", params={"after": top + 1})
    assert r.status_code == 422
    r = client.get(f"/api/v1/jobs/{job_id}/events/stream", params={"after": top + 1})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "after"
    r = client.get(f"/api/v1/jobs/{job_id}/events/stream",
                   headers={"Last-Event-ID": str(top + 1)})
    assert r.status_code == 422 and r.json()["argument"] == "Last-Event-ID"


def test_a_revoked_tokens_open_streams_end_within_the_recheck(api):
    project = f"revoke-{api.backend}"
    secret = _token(api, project)
    client = api.srv.client(secret)
    gate = api.dir / f"gate-{project}"
    job_id = _submit(client, project, gate)  # waits at its gate: its stream stays open
    with Stream(client, "/api/v1/events/stream") as feed, \
            Stream(client, f"/api/v1/jobs/{job_id}/events/stream") as one:
        feed.first()
        _until(one, job_id, lambda m: m.event == "tick" and m.data["data"]["n"] == GATE_AFTER)
        assert api.local.store.revoke_token(_token_id(secret))
        assert client.get("/api/v1/jobs").status_code == 401  # a new request: at once
        # open streams: ended by the server within RECHECK_S, where keep-alives held them
        assert one.next_event(timeout=10) is None
        while feed.next_event(timeout=10) is not None:
            pass
    gate.touch()
    assert wait_until(lambda: api.local.get(job_id).terminal, what="the job")
    r = client.get(f"/api/v1/jobs/{job_id}/events/stream")
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
