"""What ``tether job status`` shows of a job's provider batches, on both backends: while the
job waits on one and after it is settled, each batch's provider id, items done / failed / in
all, the money reserved and settled at the batch price, and what the standard price would have
been. The job is driven in this process with the simulated provider's batch mode
(tests/contract/test_batches.py); the CLI reads it through its real entry point."""

from __future__ import annotations

from tether.cli.output import usd
from tether.worker.batch_poller import BatchPoller
from tests.contract.test_batches import Counting, _job
from tests.contract.test_waits import run_next
from tests.e2e.clitools import run_main
from tests.e2e.test_cli_signals import flat


def test_status_shows_a_jobs_batches_while_waiting_and_after_settling(
        capsys, app, clock, tmp_path, database_url):
    sim = Counting(tmp_path / "batches", complete_after_s=3600, now=clock.time)
    app.add_batch_provider(sim)
    _job(app)
    job = app.submit("gen")
    run_next(app)
    (b,) = app.batches(job.id)
    r = run_main(capsys, "job", "status", str(job.id), db=database_url)
    assert r.code == 0, r
    out = flat(r.out)
    assert f"waits for provider batch simulated {b.remote_id}" in out
    assert "provider batches" in out
    assert f"gen simulated {b.remote_id} submitted 0 / 0 / 3 {usd(b.reserved_usd)} - -" in out
    r = run_main(capsys, "job", "status", str(job.id), "--json", db=database_url)
    assert r.json()["batches"] == [b.to_dict()]

    clock.advance(3600)
    assert BatchPoller(app.store, app, interval=1).run_once() == 1
    run_next(app)
    (b,) = app.batches(job.id)
    assert b.settled_usd and b.standard_usd and b.items_done == 3
    r = run_main(capsys, "job", "status", str(job.id), db=database_url)
    assert r.code == 0, r
    out = flat(r.out)
    assert "waits for" not in out
    assert (f"gen simulated {b.remote_id} settled 3 / 0 / 3 {usd(b.reserved_usd)} "
            f"{usd(b.settled_usd)} {usd(b.standard_usd)}") in out
    r = run_main(capsys, "job", "status", str(job.id), "--json", db=database_url)
    got = r.json()["batches"]
    assert [(x["remote_id"], x["items_done"], x["settled_usd"], x["standard_usd"])
            for x in got] == [(b.remote_id, 3, str(b.settled_usd), str(b.standard_usd))]


def test_status_of_a_job_without_batches_shows_none(capsys, app, database_url):
    @app.job("plain")
    def plain(ctx, payload):
        return 1
    job = app.submit("plain")
    run_next(app)
    r = run_main(capsys, "job", "status", str(job.id), db=database_url)
    assert r.code == 0 and "provider batches" not in r.out
    r = run_main(capsys, "job", "status", str(job.id), "--json", db=database_url)
    assert r.json()["batches"] == []
