"""A real worker process SIGKILLed in each crash window of a provider batch, then a new worker:
the bill never exceeds the reservation, the ledger holds what was settled, nothing stays
reserved, and a batch is never uploaded twice (OpenAI reattaches by metadata; Anthropic, which
cannot be asked, spends the reservation unconfirmed instead)."""

from decimal import Decimal

import pytest

from tether import JobState, Tether
from tests.procs import start_worker, stop, wait_until
from tests.provider_server import FakeProviderServer

pytestmark = pytest.mark.slow
APP = "tests.apps.batches:app"


def _sql(app: Tether, backend: str, sqlite: str, postgres: str, *args) -> None:
    with app.store._write() as tx:
        tx.conn.execute(sqlite if backend == "sqlite" else postgres, args)


def _expire(app, backend, job_id):
    """The killed worker's lease, backdated (what its TTL would do, without waiting)."""
    _sql(app, backend, "UPDATE jobs SET lease_expires_at = 0 WHERE id = ?",
         "UPDATE jobs SET lease_expires_at = now() - interval '1 hour' WHERE id = %s", job_id)


def _poll_now(app, backend):
    """Every submitted batch due at once (backdated instead of waiting for its backoff)."""
    _sql(app, backend, "UPDATE provider_batches SET next_poll_at = 0",
         "UPDATE provider_batches SET next_poll_at = now() - interval '1 hour'")


@pytest.mark.parametrize("provider,window", [
    ("openai", "before_upload"), ("openai", "after_upload"), ("openai", "poll"),
    ("openai", "settle"), ("anthropic", "after_upload"), ("anthropic", "settle")])
def test_sigkill_in_each_window(backend, database_url, tmp_path, provider, window):
    flag = tmp_path / "crashed"
    with FakeProviderServer() as server:
        env = {"TETHER_TEST_PROVIDER_URL": server.url, "TETHER_TEST_BATCH_PROVIDER": provider,
               "TETHER_BATCH_CRASH_AT": window, "TETHER_BATCH_CRASH_FLAG": str(flag)}
        app = Tether(database_url)
        from tests.apps.batches import app as batch_app
        app.registry = batch_app.registry
        job = app.submit("batch_gen", {"items": 3})
        first = start_worker(database_url, app=APP, env=env, log=tmp_path / "w1.log")
        try:
            if window in ("poll", "settle"):
                wait_until(lambda: app.get(job.id).state == JobState.WAITING, what="parked")
                server.finish(server.uploads[0])
                _poll_now(app, backend)
            wait_until(lambda: first.poll() is not None, what="the SIGKILL")
            assert flag.read_text() == window
            _expire(app, backend, job.id)
            second = start_worker(database_url, app=APP, env=env, log=tmp_path / "w2.log")
            try:
                def settled():
                    state = app.get(job.id).state
                    if state == JobState.WAITING and server.uploads:
                        server.finish(server.uploads[-1])
                        _poll_now(app, backend)
                    return state in (JobState.SUCCEEDED, JobState.FAILED)
                wait_until(settled, timeout=60, what="the job to finish")
            finally:
                stop(second)
        finally:
            stop(first)
        done = app.get(job.id)
        assert done.state == JobState.SUCCEEDED, done.error_summary
        assert len(server.uploads) == 1, "never uploaded twice"
        (b,) = app.batches(job.id)
        ledger = app.ledger(job.id)
        total = sum((r.cost_usd for r in ledger), Decimal(0))
        assert b.settled_usd == total <= b.reserved_usd
        used = app.get(job.id).budget.used
        assert used.reserved_usd == 0 and used.spent_usd == total
        if provider == "anthropic" and window == "after_upload":
            assert set(done.result.values()) == {"unconfirmed"}
            assert b.status == "unconfirmed" and total == b.reserved_usd
        else:
            assert set(done.result.values()) == {"ok"} and len(ledger) == 3
            assert all(r.confirmed for r in ledger)
        app.close()
