"""A worker process SIGKILLed while a job hands out its callback URL (the mail sent, the hook
not returned), then a new worker, on both backends: the next attempt mails a new URL, both
URLs stay valid, the first one used answers the job and the other is then refused; a URL
whose hook returned is never mailed again, even when the job replays with its wait open."""

from urllib.parse import urlsplit

import pytest

from tether import JobState, Tether
from tether.errors import CallbackClosed
from tests.procs import start_worker, stop, wait_until

APP = "tests.apps.callbacks:app"


def _expire(app, backend, job_id):
    """The killed worker's lease, backdated (what its TTL would do, without waiting)."""
    with app.store._write() as tx:
        if backend == "sqlite":
            tx.conn.execute("UPDATE jobs SET lease_expires_at = 0 WHERE id = ?", (job_id,))
        else:
            tx.conn.execute("UPDATE jobs SET lease_expires_at = now() - interval '1 hour' "
                            "WHERE id = %s", (job_id,))


def parts(url):
    _, _, job_id, signal, raw = urlsplit(url).path.split("/")
    return int(job_id), signal, raw


def test_sigkill_inside_the_hook_mails_a_new_url_and_either_answers_once(
        backend, database_url, tmp_path):
    outbox, flag = tmp_path / "outbox", tmp_path / "crashed"
    env = {"TETHER_OUTBOX": str(outbox), "TETHER_CALLBACK_CRASH_FLAG": str(flag)}
    app = Tether(database_url)
    job = app.submit("ask_by_mail")
    first = start_worker(database_url, app=APP, env=env, log=tmp_path / "w1.log")
    try:
        wait_until(lambda: first.poll() is not None, what="the SIGKILL", log=tmp_path / "w1.log")
    finally:
        stop(first)
    assert flag.exists() and len(outbox.read_text().split()) == 1
    assert app.get(job.id).state == JobState.RUNNING, "the kill left the lease behind"
    _expire(app, backend, job.id)
    second = start_worker(database_url, app=APP, env=env, log=tmp_path / "w2.log")
    try:
        wait_until(lambda: app.get(job.id).state == JobState.WAITING, what="the park",
                   watch=second, log=tmp_path / "w2.log")
        old, new = outbox.read_text().split()
        assert old != new
        assert sorted(c.state for c in app.callbacks(job.id)) == ["unused", "unused"]
        assert app.answer_callback(*parts(old), "from the first mail").state in (
            JobState.QUEUED, JobState.RUNNING, JobState.SUCCEEDED)
        with pytest.raises(CallbackClosed):
            app.answer_callback(*parts(new), "from the second")
        wait_until(lambda: app.get(job.id).state == JobState.SUCCEEDED, what="the answer",
                   watch=second, log=tmp_path / "w2.log")
    finally:
        stop(second)
    assert app.get(job.id).result == {"answer": "from the first mail"}
    assert len(outbox.read_text().split()) == 2, "the replay mailed nothing more"
    app.close()
