"""The store's event feed (what the live streams read): order, exact resumption, project scope,
and, on PostgreSQL, the horizon that keeps a reader from moving past an event still being
written."""

from __future__ import annotations

import psycopg
import pytest

from tether import Tether
from tether.store.feed import FEED_START, parse_position
from tests.procs import wait_until


def _drain(store, after=None, projects=None, limit=2):
    """Everything after ``after``, read ``limit`` at a time (so resumption is exercised)."""
    out = []
    while True:
        page = store.feed(after=after, projects=projects, limit=limit)
        if not page:
            return out
        out.extend(page)
        after = page[-1].position


def test_the_feed_is_every_event_in_order_and_resumes_exactly(app, clock):
    store = app.store
    assert store.feed_head() == FEED_START and store.feed() == []
    a = app.submit("t", {}, project="p1")
    clock.advance(1)
    b = app.submit("t", {}, project="p2")
    store.append_event(a.id, "tick", {"n": 1})
    clock.advance(1)
    store.append_event(b.id, "tick", {"n": 2})
    every = _drain(store)
    assert [(f.project, f.event.job_id, f.event.seq, f.event.kind) for f in every] == [
        ("p1", a.id, 1, "submitted"), ("p1", a.id, 2, "tick"),  # same time: by job id
        ("p2", b.id, 1, "submitted"), ("p2", b.id, 2, "tick")]
    assert [f.event for f in every if f.event.job_id == a.id] == app.events(a.id)
    assert store.feed_head() == every[-1].position
    assert [f.event for f in _drain(store, after=every[1].position)] == [
        f.event for f in every[2:]]
    assert [f.project for f in _drain(store, projects=["p2"])] == ["p2", "p2"]
    assert _drain(store, projects=[]) == []
    for f in every:
        parse_position(f.position)
    assert store.event_seqs([a.id, b.id, 10**9]) == {a.id: 2, b.id: 2}
    assert store.event_seqs([]) == {}


@pytest.mark.parametrize("bad", ["", "1_2", "a_1_1", "1_x_1", "1_1_-1", "nan_1_1", "1_1_1_1"])
def test_a_position_that_is_not_one_is_refused(bad):
    with pytest.raises(ValueError):
        parse_position(bad)


@pytest.mark.postgres
def test_postgres_feed_stops_before_an_event_still_being_written(pg_url):
    """An event's ``at`` is its transaction's start. While a transaction that wrote one is
    open, a later event that already committed is held back, so a reader's position never
    passes the open one; once it commits, both arrive in order and nothing was skipped."""
    app = Tether(pg_url)  # the database's clock, as in production
    try:
        store = app.store
        a, b = app.submit("t", {}), app.submit("t", {})
        # the horizon also waits for other transactions of the database (other schemas too)
        start = wait_until(lambda: next((f.position for f in _drain(store, limit=100)
                                         if f.event.job_id == b.id), None),
                           what="both submissions below the horizon")
        with psycopg.connect(pg_url) as slow:  # opens a transaction, writes, does not commit
            slow.execute("INSERT INTO job_events (job_id, seq, at, kind, data) "
                         "VALUES (%s, 99, now(), 'slow', '{}')", (a.id,))
            store.append_event(b.id, "fast", {})  # commits, with a later `at`
            seen = store.feed(after=start)
            assert [f.event.kind for f in seen] == []
            slow.commit()
        def both():
            got = _drain(store, after=start)
            return got if len(got) >= 2 else None

        after = wait_until(both, what="both events to be final")
        assert [(f.event.job_id, f.event.kind) for f in after] == [(a.id, "slow"),
                                                                    (b.id, "fast")]
    finally:
        app.close()
