"""Two worker processes share one provider's rate limit through the database: the provider
(``tests/provider_server.py``) admits 4 calls per 2-second window and says so in its headers;
each process's calls wait for what the other's responses told, so none is refused. Real worker
processes, the real openai SDK (``tests/apps/ratelimited.py``)."""

from __future__ import annotations


import pytest

from tether import JobState, Tether
from tests.procs import start_worker, stop, wait_until
from tests.provider_server import FakeProviderServer

pytestmark = pytest.mark.slow

JOBS, PER_WINDOW, WINDOW_S = 12, 4, 2.0


def run_two_workers(database_url, tmp_path, server, *, from_headers: bool):
    client = Tether(database_url)
    client.migrate()
    jobs = [client.submit("ask", {"q": f"question {i}"}) for i in range(JOBS)]
    env = {"TETHER_TEST_PROVIDER_URL": server.url,
           "TETHER_TEST_FROM_HEADERS": "1" if from_headers else "0"}
    workers = [start_worker(database_url, app="tests.apps.ratelimited:app", concurrency=2,
                            env=env, log=tmp_path / f"w{n}.log") for n in range(2)]
    try:
        wait_until(lambda: all(client.get(j.id).state == JobState.SUCCEEDED for j in jobs),
                   timeout=60, what="every job to succeed")
        pids = {w.id: w.pid for w in client.workers()}
        ran = {pids[a.worker_id] for j in jobs for a in client.attempts(j.id)}
        scopes = {s.scope: s for s in client.rate_scopes()}
    finally:
        codes = [stop(w) for w in workers]
        client.close()
    assert codes == [0, 0]
    return ran, scopes, {w.pid for w in workers}


def test_two_worker_processes_slow_down_before_the_provider_refuses(database_url, tmp_path):
    with FakeProviderServer(requests=PER_WINDOW, window_s=WINDOW_S) as server:
        ran, scopes, pids = run_two_workers(database_url, tmp_path, server, from_headers=True)
        admitted = sorted(server.admitted)
    assert server.refused == 0, f"{server.refused} calls refused"
    assert len(admitted) == JOBS and ran == pids, "both processes made calls"
    span = admitted[-1] - admitted[0]
    assert span >= (JOBS // PER_WINDOW - 1) * WINDOW_S * 0.9, f"calls spread over {span:.2f}s"
    told = scopes["openai/gpt-4o-mini"].provider
    assert told is not None and told.requests_limit == PER_WINDOW
