"""Retrying transient PostgreSQL failures never does a non-idempotent write twice."""

import pytest

from tether.errors import StoreError
from tether.store.postgres.retry import TransientStoreError, retry_transient


def make_store(failures, *, retry_timeout=5.0):
    """A fake store whose methods fail with the given transient errors, then succeed."""

    @retry_transient(idempotent=("finish",), never=("heartbeat",))
    class Fake:
        def __init__(self):
            self.retry_timeout = retry_timeout
            self.calls = 0
            self.recovered = 0

        def _recover(self):
            self.recovered += 1

        def _attempt(self):
            self.calls += 1
            if failures:
                raise failures.pop(0)
            return "ok"

        def finish(self):
            return self._attempt()

        def submit(self, conn=None):
            return self._attempt()

        def heartbeat(self):
            return self._attempt()

    return Fake()


def lost(during_commit=False):
    return TransientStoreError("connection lost", during_commit=during_commit)


def test_failures_before_commit_are_retried_for_every_operation():
    store = make_store([lost(), lost()])
    assert store.submit() == "ok" and store.calls == 3 and store.recovered == 2


def test_a_lost_commit_is_retried_only_when_repeating_is_harmless():
    store = make_store([lost(during_commit=True)])
    assert store.finish() == "ok" and store.calls == 2
    store = make_store([lost(during_commit=True)])
    with pytest.raises(StoreError, match="outcome is unknown"):
        store.submit()
    assert store.calls == 1


def test_the_callers_transaction_and_heartbeats_are_never_retried():
    store = make_store([lost()])
    with pytest.raises(TransientStoreError):
        store.submit(conn=object())
    store = make_store([lost()])
    with pytest.raises(TransientStoreError):
        store.heartbeat()
    assert store.calls == 1


def test_retrying_stops_at_the_deadline():
    store = make_store([lost() for _ in range(100)], retry_timeout=0.3)
    with pytest.raises(TransientStoreError):
        store.finish()
    assert 2 <= store.calls < 100


def _transient_from(cause):
    try:
        try:
            raise cause
        except Exception as exc:
            raise TransientStoreError("PostgreSQL unavailable") from exc
    except TransientStoreError as exc:
        return exc


def test_a_one_statement_submit_knows_when_the_server_rolled_it_back():
    """The one-statement submit may retry after the server ended the session or no connection
    could be had (nothing committed), but not after a silent drop (it may have committed)."""
    import psycopg
    from psycopg_pool import PoolTimeout

    from tether.store.postgres.store import _outcome_unknown

    assert not _outcome_unknown(_transient_from(psycopg.errors.AdminShutdown("terminating")))
    assert not _outcome_unknown(_transient_from(PoolTimeout("no connection")))
    assert _outcome_unknown(_transient_from(psycopg.OperationalError("server closed the "
                                                                     "connection")))
