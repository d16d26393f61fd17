"""Versions routed between real worker processes on one database: an old worker (version 1)
and a new one (version 2, ``tests/apps/versions.py``). A version-1 job waiting for a signal,
answered after the new worker started, is replayed by the old worker; new submissions run on
the new one. Both backends."""

from __future__ import annotations

import pytest

from tether import JobState, Tether
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow
APP = "tests.apps.versions:app"


def test_an_old_waiting_job_runs_on_the_old_worker_new_jobs_on_the_new(database_url, tmp_path):
    app = Tether(database_url)
    old = start_worker(database_url, app=APP, concurrency=2,
                       env={"TETHER_TEST_VERSION": "1"}, log=tmp_path / "old.log")
    new = None
    try:
        Tether(database_url).migrate()
        submitter_v1 = Tether(database_url)
        submitter_v1.register("versioned", lambda ctx, p: None, version="1")
        waiting = submitter_v1.submit("versioned", {"wait": True})
        submitter_v1.close()
        wait_until(lambda: app.get(waiting.id).state == JobState.WAITING, timeout=60,
                   what="the version-1 job to wait")
        new = start_worker(database_url, app=APP, concurrency=2,
                           env={"TETHER_TEST_VERSION": "2"}, log=tmp_path / "new.log")
        wait_until(lambda: any((w.versions or {}).get("versioned") == ["2"]
                               for w in app.workers()), timeout=60, what="the new worker")
        submitter_v2 = Tether(database_url)
        submitter_v2.register("versioned", lambda ctx, p: None, version="2")
        fresh = [submitter_v2.submit("versioned", {}) for _ in range(3)]
        submitter_v2.close()
        app.signal(waiting.id, "go")
        wait_until(lambda: all(app.get(j.id).terminal for j in [waiting, *fresh]), timeout=60,
                   what="every job to finish")
        assert app.get(waiting.id).result == {"version": "1", "pid": old.pid}
        assert [app.get(j.id).result for j in fresh] == [{"version": "2", "pid": new.pid}] * 3
        assert [app.get(j.id).version for j in [waiting, *fresh]] == ["1", "2", "2", "2"]
        stop(old)
        old = None
        late = Tether(database_url)
        late.register("versioned", lambda ctx, p: None, version="1")
        stranded = late.submit("versioned", {})
        late.close()
        wait_until(lambda: app.unserved([app.get(stranded.id)]) == {stranded.id}, timeout=60,
                   what="a version-1 job without a live version-1 worker to be unserved")
        assert app.unserved_counts() == {("default", "versioned", "1"): 1}
    finally:
        for proc in (old, new):
            if proc is not None:
                stop(proc)
        app.close()
