"""LISTEN/NOTIFY wake-up: prompt on commit, silent on rollback, re-established when dropped."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from tether import FakeClock, JobState, Tether
from tether.store.base import Outcome
from tether.store.postgres.store import conninfo_from_url
from tests.procs import wait_until

pytestmark = pytest.mark.postgres


@pytest.fixture
def pair(pg_url):
    """A store that listens and an app that submits, on the same schema."""
    listening, submitting = Tether(pg_url), Tether(pg_url)

    @submitting.job("t")
    def t(ctx, payload):
        return payload

    store = listening.store
    store.wait_for_work(0)
    wait_until(lambda: store.listener.listening.is_set(), what="LISTEN")
    store.wait_for_work(0)  # consume the wake-up every (re)connect gives
    yield store, submitting
    listening.close()
    submitting.close()


def timed_wait(store, timeout: float) -> tuple[bool, float]:
    t0 = time.monotonic()
    return store.wait_for_work(timeout), time.monotonic() - t0


def test_a_commit_wakes_a_waiting_store_at_once(pair):
    store, app = pair
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(timed_wait(store, 10)))
    waiter.start()
    time.sleep(0.2)  # let the waiter block first: the point is waking a sleeper
    app.submit("t", {})
    waiter.join()
    (woken, waited), = result
    assert woken and waited < 3


def test_nothing_eligible_means_no_wake_up(pair):
    store, app = pair
    assert timed_wait(store, 0.3)[0] is False
    job = app.submit("t", {})
    assert store.wait_for_work(5) is True
    app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    app.cancel(job.id)
    assert store.wait_for_work(0.3) is False, "leasing or cancelling makes nothing claimable"


def test_resuming_a_queue_notifies(pair):
    store, app = pair
    app.submit("t", {}, queue="q")
    app.pause_queue("q")  # a queue must exist (or be declared) to be paused
    store.wait_for_work(5)  # the submit's own notification
    assert store.wait_for_work(0.3) is False
    app.resume_queue("q")
    assert store.wait_for_work(5) is True


def test_a_rolled_back_enqueue_wakes_nobody(pair, pg_url):
    store, app = pair
    with psycopg.connect(conninfo_from_url(pg_url)) as conn:
        app.submit("t", {}, conn=conn)
        conn.rollback()
        assert store.wait_for_work(0.5) is False
        app.submit("t", {}, conn=conn)
        conn.commit()
    assert store.wait_for_work(5) is True


def test_a_job_due_again_notifies(pg_url):
    clock = FakeClock()
    app, other = Tether(pg_url, clock=clock), Tether(pg_url)
    try:
        @app.job("t")
        def t(ctx, payload):
            return payload

        job = app.submit("t", {})
        (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
        app.store.start(job.id, c.attempt)
        app.store.finish(job.id, c.attempt, Outcome(JobState.RETRY_WAIT, error_code="transient",
                                                  error_summary="429", delay_s=5))
        store = other.store
        store.wait_for_work(0)
        wait_until(lambda: store.listener.listening.is_set(), what="LISTEN")
        store.wait_for_work(0)
        clock.advance(6)
        assert app.store.promote_due() == 1
        assert store.wait_for_work(5) is True
    finally:
        app.close()
        other.close()


def test_a_dropped_listen_connection_is_re_established(pair, pg_url):
    store, app = pair
    old_pid = store.listener.backend_pid
    with psycopg.connect(conninfo_from_url(pg_url), autocommit=True) as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", (old_pid,)).fetchone()[0]
    wait_until(lambda: store.listener.connections == 2 and store.listener.listening.is_set(),
               timeout=15, what="LISTEN to be re-established")
    assert store.listener.backend_pid != old_pid
    store.wait_for_work(0)  # the reconnect's own wake-up
    app.submit("t", {})
    assert store.wait_for_work(5) is True


def test_an_idle_worker_is_woken_by_notify_not_by_its_poll(pg_url):
    app = Tether(pg_url)

    @app.job("t")
    def t(ctx, payload):
        return payload

    worker = app.worker(concurrency=1, poll_interval=60)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False})
    thread.start()
    try:
        wait_until(lambda: app.store.listener is not None
                   and app.store.listener.listening.is_set(), what="the worker to LISTEN")
        time.sleep(0.2)
        t0 = time.monotonic()
        job = app.submit("t", {"x": 1})
        wait_until(lambda: app.get(job.id).state == JobState.SUCCEEDED, timeout=10,
                   what="the job to run")
        assert time.monotonic() - t0 < 5, "picked up long before the 60 s poll"
    finally:
        worker.stop()
        thread.join(10)
        app.close()


def test_a_bulk_submit_notifies_each_queue_it_fed_once(pg_url):
    """One notification per queue per submit, however many jobs; a submit that inserts
    nothing (only repeated keys) notifies nobody."""
    app = Tether(pg_url)
    try:
        app.register("t", lambda ctx, payload: payload)
        items = [{"type": "t", "queue": "a" if i % 3 else "b", "idempotency_key": f"k{i}"}
                 for i in range(600)]
        app.submit_many(items[:1])  # migrations and the queue rows, before listening
        with psycopg.connect(conninfo_from_url(pg_url), autocommit=True) as conn:
            schema = conn.execute("SELECT current_schema()").fetchone()[0]
            conn.execute(f'LISTEN "tether:{schema}"')
            app.submit_many(items)
            app.submit_many(items)
            got = [n.payload for n in conn.notifies(timeout=1.0)]
        assert sorted(got) == ["a", "b"]
    finally:
        app.close()
