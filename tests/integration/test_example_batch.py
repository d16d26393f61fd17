"""``examples/batch_generate.py`` with a real worker process on both backends: one batch for
every section, settled by the worker's sweep at half the standard price, the job woken and
finished with every section, nothing left reserved."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tether import JobState, Tether
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow


def test_the_batch_example_pays_half(database_url, tmp_path):
    from examples.batch_generate import app as example
    client = Tether(database_url)
    client.registry = example.registry
    job = client.submit("batch_generate", {"topic": "t", "sections": 5})
    env = {"TETHER_SIM_BATCH_DIR": str(tmp_path / "batches"), "TETHER_SIM_BATCH_SECONDS": "0"}
    worker = start_worker(database_url, app="examples.batch_generate:app", env=env,
                          log=tmp_path / "worker.log")
    try:
        wait_until(lambda: client.get(job.id).state in (JobState.SUCCEEDED, JobState.FAILED),
                   timeout=60, what="the batch job")
    finally:
        stop(worker)
    done = client.get(job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    assert len(done.result["sections"]) == 5 and done.result["failed"] == []
    assert Decimal(done.result["standard_usd"]) == 2 * Decimal(done.result["batch_usd"]) > 0
    assert done.budget.used.reserved_usd == 0
    assert len(client.ledger(job.id)) == 5
    client.close()
