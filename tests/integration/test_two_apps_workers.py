"""Two applications' worker processes on one database each claim only their own job types; a
job of a type no live worker serves stays queued, and status, REST and /metrics say so until a
worker serving it starts. Real worker processes, a real API server and the real CLI."""

from __future__ import annotations

import pytest

from tether import JobState, Tether
from tests.e2e.api_harness import run_server
from tests.e2e.clitools import tether
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow


def unserved_series(metrics: str) -> dict[str, float]:
    return {line.split()[0]: float(line.split()[1]) for line in metrics.splitlines()
            if line.startswith("tether_jobs_unserved{")}


def test_each_apps_workers_claim_only_their_types_and_the_rest_wait_unserved(
        database_url, tmp_path):
    client = Tether(database_url)  # registers nothing: it may submit any type
    basic = [client.submit("append_line", {"path": str(tmp_path / "basic"), "n": i})
             for i in range(3)]
    other = [client.submit("other_line", {"path": str(tmp_path / "other"), "n": i})
             for i in range(3)]
    nosuch = client.submit("nosuch", {})
    a = start_worker(database_url, app="tests.apps.basic:app", log=tmp_path / "a.log")
    b = None
    try:
        with run_server(database_url, tmp_path, insecure=True) as server, server.client() as api:
            wait_until(lambda: all(client.get(j.id).state == JobState.SUCCEEDED for j in basic),
                       what="worker A to run its app's jobs")
            wait_until(lambda: unserved_series(api.get("/metrics").text) == {
                'tether_jobs_unserved{queue="default",type="nosuch",version=""}': 1.0,
                'tether_jobs_unserved{queue="default",type="other_line",version=""}': 3.0},
                what="the unserved jobs in /metrics")
            for job in [*other, nosuch]:
                seen = client.get(job.id)
                assert (seen.state, seen.attempt_count) == (JobState.QUEUED, 0)
                assert api.get(f"/api/v1/jobs/{job.id}").json()["unserved"] is True
            assert api.get(f"/api/v1/jobs/{basic[0].id}").json()["unserved"] is False
            page = api.get("/api/v1/jobs", params={"state": "queued"}).json()["items"]
            assert {j["id"]: j["unserved"] for j in page} == {
                j.id: True for j in [*other, nosuch]}
            status = tether("job", "status", str(other[0].id), "--json", db=database_url)
            assert status.code == 0 and status.json()["unserved"] is True, status
            text = tether("job", "status", str(nosuch.id), db=database_url)
            assert "no live worker serves type nosuch on queue default" in text.out, text

            b = start_worker(database_url, app="tests.apps.other:app", log=tmp_path / "b.log")
            wait_until(lambda: all(client.get(j.id).state == JobState.SUCCEEDED for j in other),
                       what="worker B to run the other app's jobs")
            assert unserved_series(api.get("/metrics").text) == {
                'tether_jobs_unserved{queue="default",type="nosuch",version=""}': 1.0}
            assert api.get(f"/api/v1/jobs/{other[0].id}").json()["unserved"] is False
            assert api.get(f"/api/v1/jobs/{nosuch.id}").json()["unserved"] is True
        assert client.get(nosuch.id).state == JobState.QUEUED
        assert {x.worker_id for j in basic for x in client.attempts(j.id)} == {
            w.id for w in client.workers() if w.pid == a.pid}
        assert {x.worker_id for j in other for x in client.attempts(j.id)} == {
            w.id for w in client.workers() if w.pid == b.pid}
        assert {w.pid: w.types for w in client.workers()}[b.pid] == [
            "other_line", "tether.webhook"]  # every worker delivers webhooks
    finally:
        codes = [stop(w) for w in (a, b) if w is not None]
        client.close()
    assert codes == [0, 0]
    assert "types: append_line" in (tmp_path / "a.log").read_text()
