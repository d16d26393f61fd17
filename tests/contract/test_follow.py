"""``Tether.follow`` (``tether job events --follow``): every event once, in order, and woken by
the store rather than by polling.

The followers here re-read on their own only every 60 s, so one that returns within seconds
of the change it waits for was woken by the store: ``PRAGMA data_version`` on SQLite, the
NOTIFY of a finished job on PostgreSQL.
"""

from __future__ import annotations

import threading
import time

import pytest

from tether import Tether
from tether.errors import JobNotFound
from tests.procs import start_worker, stop


def _follow_in_thread(app, job_id, out: list, **kw) -> threading.Thread:
    def go():
        for event in app.follow(job_id, **kw):
            out.append(event)
        out.append(time.monotonic())
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def test_a_follower_wakes_when_another_connection_finishes_the_job(database_url):
    app, other = Tether(database_url), Tether(database_url)
    try:
        job = app.submit("t", {})
        got: list = []
        thread = _follow_in_thread(app, job.id, got, poll_s=60)
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:  # the 'submitted' event: it is reading
            time.sleep(0.01)
        assert [e.kind for e in got] == ["submitted"]
        cancelled_at = time.monotonic()
        other.cancel(job.id)
        thread.join(10)
        assert not thread.is_alive()
        *events, ended_at = got
        assert events == app.events(job.id) and events[-1].to_state == "cancelled"
        assert ended_at - cancelled_at < 5  # not the 60 s re-read
    finally:
        app.close()
        other.close()


def test_following_a_running_job_yields_its_whole_log(database_url, tmp_path):
    app = Tether(database_url)
    app.store  # noqa: B018 - migrate before the worker starts
    worker = start_worker(database_url, log=tmp_path / "worker.log")
    try:
        gate = tmp_path / "gate"
        job = app.submit("ticker", {"ticks": 8, "gate_after": 3, "gate": str(gate)})
        got: list = []
        first = app.follow(job.id, after=1)
        for event in first:
            got.append(event)
            if event.kind == "tick" and event.data["n"] == 3:
                break
        first.close()
        gate.touch()
        got.extend(app.follow(job.id, after=got[-1].seq))
        assert got == app.events(job.id)[1:] and got[-1].kind == "succeeded"
        with pytest.raises(JobNotFound):
            app.follow(job.id, projects=["elsewhere"])
    finally:
        stop(worker)
        app.close()
