"""Callback URLs on every backend (injected clock, no sleeps): a job's signal wait hands out a
single-use URL; the token answers that job's signal once, until it expires, and only while the
wait is open; it is stored hashed; a replay hands out no second one."""

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlsplit

import psycopg
import pytest

from tether import JobState, JobStateError
from tether.core import callbacks as cb
from tether.errors import (CallbackClosed, CallbackExpired, CallbackNotFound, CallbackRefused,
                           CallbackUsed, ConfigurationError, LeaseLost)
from tether.job import Lease
from tether.worker.executor import execute

PUBLIC = "https://tether.example.com/base/"


def run_next(app):
    claims = app.store.claim("w", queues=None, limit=1, lease_ttl=3600)
    if not claims:
        return None
    (c,) = claims
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(c.job.id)


def parts(url):
    """(job id, signal, token) of a callback URL."""
    path = urlsplit(url).path
    assert path.startswith("/base/callbacks/"), url
    job_id, signal, token = path.removeprefix("/base/callbacks/").split("/")
    return int(job_id), unquote(signal), token


@pytest.fixture
def handed(app):
    app.public_url = PUBLIC
    handed = []

    @app.job("approve")
    def approve(ctx, payload):
        answer = ctx.wait_for_signal(payload.get("signal", "go ahead"), timeout=3600,
                                     prompt="Ship?", callback=handed.append,
                                     callback_expires=payload.get("expires"))
        return {"answer": answer}
    return handed


def test_a_callback_url_answers_the_wait_once_and_the_job_resumes(app, clock, handed):
    job = app.submit("approve", {})
    run_next(app)
    assert app.get(job.id).state == JobState.WAITING
    (made,) = handed
    job_id, signal, token = parts(made.url)
    assert (job_id, signal, made.signal, made.state) == (job.id, "go ahead", "go ahead", "unused")
    assert (made.expires_at - made.created_at).total_seconds() == 3600, "the wait's timeout"

    shown = app.waiting_summary(job.id).to_dict()["callbacks"]
    assert [(c["id"], c["state"], c["issued_by"]) for c in shown] == [(made.id, "unused", "job")]
    assert all("url" not in c for c in shown) and token not in repr(shown)

    woken = app.answer_callback(job_id, signal, token, {"approved": True})
    assert woken.state == JobState.QUEUED
    with pytest.raises(CallbackUsed):
        app.answer_callback(job_id, signal, token, {"approved": False})
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result == {"answer": {"approved": True}}
    assert len(handed) == 1, "the replay hands out no second URL"
    (seen,) = app.callbacks(job.id)
    assert seen.state == "used" and seen.used_at is not None
    signal_events = [e.data for e in app.events(job.id) if e.kind == "signal"]
    assert signal_events == [{"name": "go ahead", "callback": made.id}]


def stored_callbacks(backend, database_url) -> list[tuple]:
    """Every ``wait_callbacks`` row as the database holds it, read over a connection of its
    own."""
    if backend == "sqlite":
        from tether.store.sqlite.store import path_from_url
        with sqlite3.connect(path_from_url(database_url)) as conn:
            return conn.execute("SELECT * FROM wait_callbacks").fetchall()
    from tether.store.postgres.store import conninfo_from_url
    with psycopg.connect(conninfo_from_url(database_url)) as conn:
        return conn.execute("SELECT * FROM wait_callbacks").fetchall()


def test_the_token_is_stored_hashed(app, handed, backend, database_url):
    app.submit("approve", {})
    run_next(app)
    _, _, token = parts(handed[0].url)
    rows = stored_callbacks(backend, database_url)
    assert len(rows) == 1
    assert token not in repr(rows) and cb.digest(token) in repr(rows)


def test_an_expired_callback_is_refused_and_stays_unspent(app, clock, handed):
    job = app.submit("approve", {"expires": 60})
    run_next(app)
    _, signal, token = parts(handed[0].url)
    clock.advance(60)
    with pytest.raises(CallbackExpired):
        app.answer_callback(job.id, signal, token, 1)
    assert app.get(job.id).state == JobState.WAITING
    assert [c.state for c in app.callbacks(job.id)] == ["expired"]


def test_a_token_for_another_job_or_signal_or_malformed_is_refused_and_not_spent(app, handed):
    first = app.submit("approve", {})
    other = app.submit("approve", {"signal": "other"})
    run_next(app)
    run_next(app)
    _, signal, token = parts(handed[0].url)
    _, other_signal, _ = parts(handed[1].url)
    for job_id, name, raw in ((other.id, signal, token), (first.id, other_signal, token),
                              (first.id, signal, token[:-1] + ("A" if token[-1] != "A" else "B")),
                              (first.id, signal, "tcb_not-a-token"),
                              (first.id, signal, "")):
        with pytest.raises(CallbackNotFound):
            app.answer_callback(job_id, name, raw, 1)
    assert app.get(first.id).state == app.get(other.id).state == JobState.WAITING
    assert app.answer_callback(first.id, signal, token, 1).state == JobState.QUEUED


def test_one_answer_per_wait_and_none_once_it_is_over(app, handed):
    job = app.submit("approve", {})
    run_next(app)
    second = app.issue_callback(job.id, expires_in=600, issued_by="token:ops")
    assert second.url and second.signal == "go ahead" and second.issued_by == "token:ops"
    _, signal, token = parts(handed[0].url)
    app.answer_callback(job.id, signal, token, "yes")
    with pytest.raises(CallbackClosed):
        app.answer_callback(*parts(second.url), "no")
    run_next(app)
    assert app.get(job.id).result == {"answer": "yes"}
    with pytest.raises(JobStateError):
        app.issue_callback(job.id)


def test_a_wait_answered_by_an_authenticated_signal_closes_its_callbacks(app, handed):
    job = app.submit("approve", {})
    run_next(app)
    app.signal(job.id, "go ahead", "direct")
    run_next(app)
    with pytest.raises(CallbackClosed):
        app.answer_callback(*parts(handed[0].url), "late")
    assert app.get(job.id).result == {"answer": "direct"}


def test_an_attempt_that_ends_before_the_hook_returns_hands_out_a_new_url(app, clock):
    app.public_url = PUBLIC
    handed, fail = [], [True]

    @app.job("flaky_notify", max_attempts=3, retry_on=(ConnectionError,))
    def flaky_notify(ctx, payload):
        def notify(made):
            handed.append(made)
            if fail and fail.pop():
                raise ConnectionError("mail server down")
        return ctx.wait_for_signal("ok", callback=notify)
    job = app.submit("flaky_notify")
    assert run_next(app).state == JobState.RETRY_WAIT, "the hook raised: the attempt failed"
    clock.advance(3600)
    app.store.promote_due()
    assert run_next(app).state == JobState.WAITING
    assert len(handed) == 2 and handed[0].id != handed[1].id
    assert (handed[1].expires_at - handed[1].created_at).total_seconds() == cb.DEFAULT_EXPIRY_S
    app.answer_callback(*parts(handed[0].url), "from the first mail")
    run_next(app)
    assert app.get(job.id).result == "from the first mail"


def test_only_a_job_waiting_for_a_signal_takes_a_callback_and_it_needs_a_public_url(app):
    @app.job("plain")
    def plain(ctx, payload):
        return 1
    job = app.submit("plain")
    app.public_url = None
    with pytest.raises(ConfigurationError):
        app.issue_callback(job.id)
    app.public_url = PUBLIC
    with pytest.raises(JobStateError):
        app.issue_callback(job.id)
    with pytest.raises(LeaseLost):
        app.store.issue_callback(job.id, id="0" * 16, token_hash="x", expires_in=1,
                                 issued_by="job", attempt=99)


def race(calls) -> list[str]:
    """Run ``calls`` at once from threads; each one's outcome: "ok" or its error code."""
    gate = threading.Barrier(len(calls))

    def one(call):
        gate.wait()
        try:
            call()
            return "ok"
        except CallbackRefused as exc:
            return exc.code
    with ThreadPoolExecutor(len(calls)) as pool:
        return sorted(pool.map(one, calls))


def test_concurrent_answers_deliver_one_signal(app, handed):
    job = app.submit("approve", {})
    run_next(app)
    link, other = parts(handed[0].url), parts(app.issue_callback(job.id).url)
    outcomes = race([lambda i=i: app.answer_callback(*link, i) for i in range(6)])
    assert outcomes == ["callback_used"] * 5 + ["ok"]
    with pytest.raises(CallbackClosed):
        app.answer_callback(*other, "late")
    run_next(app)
    assert app.get(job.id).result["answer"] in range(6)

    second = app.submit("approve", {})
    run_next(app)
    links = [parts(handed[1].url), parts(app.issue_callback(second.id).url)]
    assert race([lambda: app.answer_callback(*links[0], "a"),
                 lambda: app.answer_callback(*links[1], "b")]) == ["callback_closed", "ok"]
    run_next(app)
    assert app.get(second.id).result["answer"] in ("a", "b")
    for j in (job, second):
        assert len([e for e in app.events(j.id) if e.kind == "signal"]) == 1, "one signal"


def test_a_pruned_jobs_callbacks_go_with_it(app, clock, handed, backend, database_url):
    job = app.submit("approve", {})
    run_next(app)
    app.cancel(job.id)
    clock.advance(3600)
    assert len(stored_callbacks(backend, database_url)) == 1
    assert app.store.prune(older_than_s=60) == 1
    assert stored_callbacks(backend, database_url) == []


def test_a_replay_that_finds_its_wait_still_open_hands_out_nothing_more(app, handed):
    job = app.submit("approve", {})
    run_next(app)
    assert app.pause(job.id).state == JobState.PAUSED
    assert app.resume(job.id).state == JobState.QUEUED
    assert run_next(app).state == JobState.WAITING, "replayed to the same open wait"
    assert len(handed) == 1 and len(app.callbacks(job.id)) == 1
    app.answer_callback(*parts(handed[0].url), "ok")
    assert run_next(app).result == {"answer": "ok"}


def test_a_worker_without_a_public_url_fails_the_job_loudly_and_stores_no_callback(app,
                                                                                  handed):
    app.public_url = None
    job = app.submit("approve", {})
    done = run_next(app)
    assert (done.state, done.error_code) == (JobState.FAILED, "configuration_error")
    assert "TETHER_PUBLIC_URL" in done.error_summary
    assert handed == [] and app.callbacks(job.id) == []
