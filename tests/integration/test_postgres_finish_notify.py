"""The finish NOTIFY (migrations 0007, 0015, 0017) is sent only while a finish listener is
registered: workers' finishes then commit without the server's notify lock, and a listener
still hears every finish, including one that looked for listeners just before it registered."""

from __future__ import annotations

import asyncio
import threading

import psycopg
import pytest

from tether import JobState, Tether
from tether.store.base import Outcome
from tether.store.postgres.notify import FinishListener
from tether.store.postgres.store import conninfo_from_url
from tether.api.stream_hub import StreamHub
from tests.procs import wait_until

pytestmark = pytest.mark.postgres


@pytest.fixture
def app(pg_url):
    app = Tether(pg_url)
    app.register("t", lambda ctx, payload: payload)
    yield app
    app.close()


@pytest.fixture
def raw(pg_url):
    """A plain LISTEN on the finish channel that does not register itself."""
    with psycopg.connect(conninfo_from_url(pg_url), autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
        conn.execute(f'LISTEN "tether.done:{schema}"')
        yield conn


def finish(app: Tether) -> int:
    job = app.submit("t", {})
    (claim,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    app.store.start(job.id, claim.attempt)
    app.store.finish(job.id, claim.attempt, Outcome(JobState.SUCCEEDED, result_json="{}"))
    return job.id


def heard(conn: psycopg.Connection, timeout: float = 0.5, expect: int | None = None
          ) -> list[str]:
    """What arrived within ``timeout``, or as soon as ``expect`` notifications did."""
    return [n.payload for n in conn.notifies(timeout=timeout, stop_after=expect)]


def registrations(app: Tether) -> int:
    with app.store._read() as tx:
        return tx.conn.execute("SELECT count(*) AS n FROM finish_listeners "
                               "WHERE until > now()").fetchone()["n"]


def test_a_finish_notifies_only_while_a_listener_is_registered(app, raw):
    finish(app)
    assert heard(raw) == [], "nobody registered: no NOTIFY, no notify lock at commit"
    signal = app.store.finish_signal()
    try:
        assert registrations(app) == 1
        job_id = finish(app)
        assert heard(raw, 5.0, expect=1) == [str(job_id)]
        got: set[int] = set()
        wait_until(lambda: got.update(signal.wait(1.0) or ()) or job_id in got,
                   timeout=10, what="the registered listener to hear the finish")
    finally:
        signal.close()
    wait_until(lambda: registrations(app) == 0, timeout=10, what="the row to be removed")
    finish(app)
    assert heard(raw) == []


def _finish_many(app: Tether, n: int) -> list[int]:
    """``n`` jobs finished by one batched statement (the worker's path for plain successes)."""
    jobs = [app.submit("t", {}) for _ in range(n)]
    claims = app.store.claim("w", queues=None, limit=n, lease_ttl=30, start=True)
    assert sorted(c.job.id for c in claims) == sorted(j.id for j in jobs)
    app.store.finish_many([(c.job.id, c.attempt, Outcome(JobState.SUCCEEDED, result_json="{}"))
                           for c in claims])
    return sorted(j.id for j in jobs)


def test_a_batched_finish_notifies_every_job_or_none(app, raw):
    """The listeners' table is read once per transaction (0017): a batch finished while
    nobody listens sends nothing, and one finished while somebody does sends every id."""
    _finish_many(app, 5)
    assert heard(raw) == []
    with app.store._write() as tx:
        tx.conn.execute("INSERT INTO finish_listeners (id, until) "
                        "VALUES ('here', now() + interval '1 minute')")
    ids = _finish_many(app, 5)
    assert sorted(int(p) for p in heard(raw, 5.0, expect=5)) == ids


def test_an_expired_registration_notifies_nobody(app, raw):
    with app.store._write() as tx:
        tx.conn.execute("INSERT INTO finish_listeners (id, until) "
                        "VALUES ('gone', now() - interval '1 second')")
    finish(app)
    assert heard(raw) == []
    with app.store._write() as tx:
        tx.conn.execute("UPDATE finish_listeners SET until = now() + interval '1 minute'")
    job_id = finish(app)
    assert heard(raw, 5.0, expect=1) == [str(job_id)]


def test_a_listener_counts_as_listening_only_after_finishes_that_missed_it_commit(app,
                                                                                  pg_url):
    """A transaction finished a job (and found no listener) but has not committed when a
    listener registers: the listener waits for it, so a read after it is listening sees that
    finish; otherwise the finish would be neither notified nor visible to that read."""
    job = app.submit("t", {})
    opened: list[FinishListener] = []
    with psycopg.connect(conninfo_from_url(pg_url)) as conn:
        conn.execute("UPDATE jobs SET state = 'cancelled', finished_at = now() WHERE id = %s",
                     (job.id,))
        opening = threading.Thread(target=lambda: opened.append(app.store.finish_signal()))
        opening.start()
        opening.join(1.0)
        assert opening.is_alive(), "it must wait for the transaction that looked before it"
        conn.commit()
    opening.join(10)
    try:
        assert not opening.is_alive() and opened
        assert app.get(job.id).state == JobState.CANCELLED
    finally:
        for signal in opened:
            signal.close()


def test_the_stream_hub_registers_while_streams_are_open_and_not_after(app):
    """A ``?wait=`` waiter keeps the hub's signal, and so its registration, open; once no
    stream is open for ``idle_close_s`` the registration goes, and a new stream brings it
    back."""
    hub = StreamHub(app, poll_s=0.1, keepalive_s=3600, idle_close_s=0.2)
    job = app.submit("t", {})

    async def main() -> None:
        waiting = asyncio.ensure_future(hub.until_terminal(job, 60))
        await asyncio.to_thread(wait_until, lambda: registrations(app) == 1, timeout=10,
                                what="the hub to register")
        await asyncio.to_thread(app.cancel, job.id)
        done = await asyncio.wait_for(waiting, 10)
        assert done.state == JobState.CANCELLED

    try:
        asyncio.run(main())
        wait_until(lambda: registrations(app) == 0, timeout=10,
                   what="the idle hub to drop its registration")
        job = app.submit("t", {})
        asyncio.run(main())
    finally:
        hub.close()
