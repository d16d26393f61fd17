"""Provider batches on every backend (the simulated provider's batch mode; the real SDKs are in
tests/integration/test_batches_sdk.py): the worst case reserved at the batch price before the
upload, the job waiting without a lease, one sweep step settling every item and waking the
job, the replay returning recorded answers without a second upload."""

from decimal import Decimal

import pytest

from tether import Budget, Estimate, JobState
from tether.core.batches import BatchFailure
from tether.core.usage import Usage
from tether.providers.batches import SimulatedBatches
from tether.worker.batch_poller import BatchPoller

from tests.contract.test_waits import assert_parked, run_next

EST = Estimate(input_tokens=100, max_output_tokens=50)
REQUESTS = {f"q{i}": {"prompt": f"question {i}", "max_tokens": 50} for i in range(3)}


class Counting(SimulatedBatches):
    """The simulated batch provider, counting uploads."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.uploads = []

    def submit(self, **kwargs):
        remote = super().submit(**kwargs)
        self.uploads.append(remote)
        return remote


@pytest.fixture
def sim(app, clock, tmp_path):
    adapter = Counting(tmp_path / "batches", complete_after_s=3600, now=clock.time)
    app.add_batch_provider(adapter)
    return adapter


def _job(app, runs=None):
    @app.job("gen")
    def gen(ctx, payload):
        answers = ctx.batch(key="gen", provider="simulated", model="sim-small",
                            requests=REQUESTS, estimate=EST)
        if runs is not None:
            runs.append(ctx.attempt)
        return {k: (v.to_dict() if isinstance(v, BatchFailure) else v["text"])
                for k, v in answers.items()}


def test_a_batch_reserves_first_waits_without_a_lease_and_settles_at_the_batch_price(
        app, clock, sim):
    runs = []
    _job(app, runs)
    job = app.submit("gen")
    run_next(app)
    assert_parked(app, job.id)
    (b,) = app.batches(job.id)
    price = app.price_profile.batch_price("simulated", "sim-small")
    assert b.status == "submitted" and b.remote_id == sim.uploads[0] and b.items_total == 3
    assert b.reserved_usd == 3 * price.reservation(EST).cost_usd
    used = app.get(job.id).budget.used
    assert used.reserved_usd == b.reserved_usd and used.reserved_calls == 3
    assert app.project_budget(job.project).used.reserved_usd == b.reserved_usd
    poller = BatchPoller(app.store, app, interval=1)
    assert poller.run_once() == 0, "not due yet"
    clock.advance(3599)
    assert poller.run_once() == 0, "not due: the provider said when it would finish"
    assert app.get(job.id).state == JobState.WAITING
    clock.advance(1)
    assert poller.run_once() == 1
    assert app.get(job.id).state == JobState.QUEUED
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and runs == [2]
    assert set(done.result) == set(REQUESTS) and all(isinstance(v, str) for v in
                                                     done.result.values())
    assert len(sim.uploads) == 1, "the replay never uploads again"
    (b,) = app.batches(job.id)
    ledger = app.ledger(job.id)
    assert sorted(r.key for r in ledger) == [f"batch:gen/q{i}" for i in range(3)]
    assert all(r.confirmed and r.input_per_mtok == price.input_per_mtok for r in ledger)
    total = sum((r.cost_usd for r in ledger), Decimal(0))
    assert b.settled_usd == total and b.standard_usd == 2 * total
    assert total <= b.reserved_usd
    used = app.get(job.id).budget.used
    assert used.reserved_usd == 0 and used.reserved_calls == 0
    assert used.spent_usd == total and used.calls == 3


def test_a_batch_that_would_cross_a_limit_is_never_uploaded(app, clock, sim):
    _job(app)
    one = app.price_profile.batch_price("simulated", "sim-small").reservation(EST).cost_usd
    job = app.submit("gen", budget=Budget(max_cost_usd=one * 2))
    done = run_next(app)
    assert done.state == JobState.PAUSED and done.error_code == "budget_exhausted"
    assert sim.uploads == [] and app.batches(job.id) == []


def test_failed_and_missing_items_come_back_classified(app, clock, sim, monkeypatch):
    from tether.core.batches import ItemResult
    from tether.providers.batches import item_failure
    real = sim.results

    def results(remote_id):
        got = real(remote_id)
        got["q1"] = item_failure(400, {"error": {"message": "maximum context length",
                                                 "code": "context_length_exceeded"}})
        del got["q2"]
        return got
    monkeypatch.setattr(sim, "results", results)
    _job(app)
    job = app.submit("gen")
    run_next(app)
    sim.finish(sim.uploads[0])
    clock.advance(3600)
    assert BatchPoller(app.store, app, interval=1).run_once() == 1
    done = run_next(app)
    assert isinstance(done.result["q0"], str)
    assert done.result["q1"]["error_code"] == "provider_error"
    assert not done.result["q1"]["retryable"]
    assert done.result["q2"]["error_code"] == "batch_ended" and done.result["q2"]["retryable"]
    (b,) = app.batches(job.id)
    assert (b.items_done, b.items_failed) == (1, 2)
    assert [r.key for r in app.ledger(job.id)] == ["batch:gen/q0"], "unbilled failures refunded"
    assert ItemResult


def lose_the_batch_id_then_replay(app, clock):
    """Run the next job until its batch is uploaded, stop it there (as a crash after the
    upload, before the provider's id commits), take its lease back, run it again."""
    real = app.store.batch_submitted

    def lost(*args, **kwargs):
        raise KeyboardInterrupt
    app.store.batch_submitted = lost
    with pytest.raises(KeyboardInterrupt):
        run_next(app)
    app.store.batch_submitted = real
    clock.advance(7200)
    assert app.store.expire_leases()
    clock.advance(3600)
    app.store.promote_due()
    run_next(app)


def test_a_replay_after_the_upload_reattaches_instead_of_uploading_again(app, clock, sim):
    _job(app)
    job = app.submit("gen")
    lose_the_batch_id_then_replay(app, clock)
    assert_parked(app, job.id)
    (b,) = app.batches(job.id)
    assert b.remote_id == sim.uploads[0] and len(sim.uploads) == 1


def test_cancelling_a_waiting_job_cancels_its_remote_batch_and_settles_it(app, clock, sim):
    _job(app)
    job = app.submit("gen")
    run_next(app)
    app.cancel(job.id)
    assert app.get(job.id).state == JobState.CANCELLED
    clock.advance(3600)
    assert BatchPoller(app.store, app, interval=1).run_once() == 1
    assert sim.poll(sim.uploads[0]).state == "cancelled"
    (b,) = app.batches(job.id)
    assert b.status == "settled" and b.remote_status == "cancelled" and b.settled_usd == 0
    used = app.get(job.id).budget.used
    assert used.reserved_usd == 0 and used.reserved_calls == 0
    assert app.get(job.id).state == JobState.CANCELLED


def test_async_job_code_batches_too(app, clock, sim):
    @app.job("agen")
    async def agen(ctx, payload):
        answers = await ctx.abatch(key="a", provider="simulated", model="sim-small",
                                   requests=REQUESTS, estimate=EST)
        return sorted(answers)
    job = app.submit("agen")
    run_next(app)
    assert_parked(app, job.id)
    sim.finish(sim.uploads[0])
    clock.advance(3600)
    assert BatchPoller(app.store, app, interval=1).run_once() == 1
    done = run_next(app)
    assert done.state == JobState.SUCCEEDED and done.result == sorted(REQUESTS)
    assert len(sim.uploads) == 1


def test_a_waiting_batch_shows_in_the_jobs_status(app, clock, sim):
    _job(app)
    job = app.submit("gen")
    run_next(app)
    w = app.waiting_summary(job.id)
    assert w.kind == "provider_batch" and w.batch["remote_id"] == sim.uploads[0]
    assert w.batch["items_total"] == 3 and w.to_dict()["batch"] == w.batch


def test_a_replay_whose_batch_changed_pauses_instead_of_reusing_silently(app, clock, sim):
    asked = {"prompt": "question 0"}

    @app.job("changing")
    def changing(ctx, payload):
        return sorted(ctx.batch(key="c", provider="simulated", model="sim-small",
                                requests={"q0": dict(asked)}, estimate=EST))
    app.submit("changing")
    run_next(app)
    sim.finish(sim.uploads[0])
    clock.advance(3600)
    BatchPoller(app.store, app, interval=1).run_once()
    asked["prompt"] = "another question"
    done = run_next(app)
    assert done.state == JobState.PAUSED and done.error_code == "journal_mismatch"
    assert len(sim.uploads) == 1


def test_metrics_show_the_batches_open_and_the_money_they_hold(app, clock, sim):
    from fastapi.testclient import TestClient

    from tether.api.server import create_app
    from tests.e2e.test_metrics_engine import metric
    _job(app)
    job = app.submit("gen")
    run_next(app)
    (b,) = app.batches(job.id)
    text = TestClient(create_app(app, auth=False)).get("/metrics").text
    assert metric(text, 'tether_provider_batches_open{provider="simulated"}') == 1
    assert metric(text, 'tether_provider_batches_reserved_usd{provider="simulated"}') == \
        float(b.reserved_usd)
    assert app.store.open_batches() == {"simulated": (1, b.reserved_usd)}
    sim.finish(sim.uploads[0])
    clock.advance(3600)
    BatchPoller(app.store, app, interval=1).run_once()
    assert app.store.open_batches() == {}


def test_each_attempt_at_a_batch_has_a_span_reserved_then_a_journal_hit(app, clock, sim):
    from tests.contract.test_tracing import finished
    from tests.otel import in_memory
    exporter = in_memory()
    exporter.recording = True
    try:
        _job(app)
        app.submit("gen")
        run_next(app)
        sim.finish(sim.uploads[0])
        clock.advance(3600)
        BatchPoller(app.store, app, interval=1).run_once()
        run_next(app)
        spans = [s for s in finished(exporter)
                 if s["attributes"].get("tether.call.key") == "batch:gen"]
    finally:
        exporter.recording = False
        exporter.clear()
    first, replay = spans
    assert first["attributes"]["tether.reserved_usd"] > 0
    assert first["attributes"]["error.type"] == "waiting"
    assert replay["attributes"]["tether.journal"] == "hit"


def test_the_simulated_provider_bills_each_item_once_at_the_batch_price(app, clock, sim):
    from tether.providers.simulated import read_bill
    _job(app)
    job = app.submit("gen")
    run_next(app)
    bill = sim.dir / "bill.jsonl"
    assert read_bill(bill) == [], "nothing billed while the batch runs"
    clock.advance(3600)
    assert BatchPoller(app.store, app, interval=1).run_once() == 1
    sim.results(sim.uploads[0])  # results fetched again, as by a second sweep: billed once
    run_next(app)
    billed = read_bill(bill)
    ledger = app.ledger(job.id)
    assert sorted((b.job_id, b.key, b.cost_usd) for b in billed) == \
        sorted((job.id, r.key, r.cost_usd) for r in ledger)
    price = app.price_profile.batch_price("simulated", "sim-small")
    assert all(b.cost_usd == price.cost(Usage(input_tokens=b.input_tokens,
                                              output_tokens=b.output_tokens))
               and b.status == "ok" for b in billed)


def test_a_cancelled_simulated_batch_bills_nothing(app, clock, sim):
    from tether.providers.simulated import read_bill
    _job(app)
    job = app.submit("gen")
    run_next(app)
    app.cancel(job.id)
    clock.advance(3600)
    BatchPoller(app.store, app, interval=1).run_once()
    assert read_bill(sim.dir / "bill.jsonl") == [] and app.ledger(job.id) == []
