"""A provider batch reserved but not known to be at the provider, on every backend: a cancel
gives back what was never sent in its own transaction; the sweep settles the rest of an ended
job's batches (found at the provider: polled and cancelled there; never sent: released; from
a provider that cannot be asked: spent, unconfirmed). Nothing stays reserved."""

import pytest

from tether import JobState

from tests.contract.test_batches import REQUESTS, Counting, _job
from tests.contract.test_waits import kinds, run_next
from tether.worker.batch_poller import BatchPoller


class Blind(Counting):
    """A provider that cannot be asked for an upload whose id was lost (as Anthropic's)."""

    reattach = False


@pytest.fixture
def sim(app, clock, tmp_path):
    adapter = Counting(tmp_path / "batches", complete_after_s=3600, now=clock.time)
    app.add_batch_provider(adapter)
    return adapter


def _reserved(app, job_id):
    used = app.get(job_id).budget.used
    return used.reserved_usd, used.reserved_calls


def _crash_at(app, method):
    """Run the next job until ``store.<method>`` is called, and stop it there, as a SIGKILL."""
    real = getattr(app.store, method)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt
    setattr(app.store, method, crash)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_next(app)
    finally:
        setattr(app.store, method, real)


def _sweep(app, clock):
    return BatchPoller(app.store, app, interval=1).run_once()


def test_a_job_cancelled_before_its_batch_was_sent_gets_its_reservation_back_at_once(
        app, clock, sim):
    _job(app)
    job = app.submit("gen")
    real = app.store.reserve_batch

    def reserve_then_cancel(*args, **kwargs):
        got = real(*args, **kwargs)
        app.cancel(job.id)  # arrives between the reservation and the upload
        return got
    app.store.reserve_batch = reserve_then_cancel
    done = run_next(app)
    assert done.state == JobState.CANCELLED
    assert sim.uploads == [] and app.batches(job.id) == []
    assert _reserved(app, job.id) == (0, 0)
    assert app.project_budget(job.project).used.reserved_usd == 0
    (released,) = [e for e in app.events(job.id) if e.kind == "batch_released"]
    assert released.data["reason"] == "cancelled" and released.data["released_usd"] != "0"
    assert app.ledger(job.id) == []


def test_cancelling_a_queued_job_whose_attempt_died_before_the_upload_releases_it(
        app, clock, sim):
    _job(app)
    job = app.submit("gen")
    _crash_at(app, "batch_uploading")
    assert _reserved(app, job.id)[1] == len(REQUESTS)
    clock.advance(7200)
    app.store.expire_leases()
    app.cancel(job.id)
    assert app.get(job.id).state == JobState.CANCELLED
    assert app.batches(job.id) == [] and _reserved(app, job.id) == (0, 0)
    assert sim.uploads == [] and _sweep(app, clock) == 0


def test_a_replay_uploads_an_unsent_batch_without_asking_even_a_blind_provider(
        app, clock, tmp_path):
    blind = Blind(tmp_path / "blind", complete_after_s=3600, now=clock.time)
    app.add_batch_provider(blind)
    _job(app)
    job = app.submit("gen")
    _crash_at(app, "batch_uploading")
    clock.advance(7200)
    app.store.expire_leases()
    app.store.promote_due()
    run_next(app)
    (b,) = app.batches(job.id)
    assert b.status == "submitted" and b.remote_id == blind.uploads[0]
    assert len(blind.uploads) == 1


def test_the_sweep_releases_an_ended_jobs_batch_that_the_provider_never_got(app, clock, sim):
    _job(app)
    job = app.submit("gen")
    real = sim.submit
    sim.submit = lambda **kw: (_ for _ in ()).throw(KeyboardInterrupt)  # dies mid-upload
    with pytest.raises(KeyboardInterrupt):
        run_next(app)
    sim.submit = real
    clock.advance(7200)
    app.store.expire_leases()
    app.cancel(job.id)
    (b,) = app.batches(job.id)
    assert b.status == "submitting" and b.remote_status == "uploading", \
        "it may have been sent: the cancel leaves it to the sweep"
    assert _reserved(app, job.id)[1] == len(REQUESTS)
    assert _sweep(app, clock) == 1
    assert app.batches(job.id) == [] and _reserved(app, job.id) == (0, 0)
    assert sim.uploads == [] and "batch_released" in kinds(app, job.id)


def test_the_sweep_finds_an_ended_jobs_upload_cancels_it_and_settles(app, clock, sim):
    _job(app)
    job = app.submit("gen")
    _crash_at(app, "batch_submitted")
    assert len(sim.uploads) == 1
    clock.advance(7200)
    app.store.expire_leases()
    app.cancel(job.id)
    assert _sweep(app, clock) == 1, "found, cancelled at the provider and settled"
    (b,) = app.batches(job.id)
    assert b.remote_id == sim.uploads[0] and b.status == "settled"
    assert b.remote_status == "cancelled" and b.settled_usd == 0
    assert _reserved(app, job.id) == (0, 0) and len(sim.uploads) == 1
    assert app.get(job.id).state == JobState.CANCELLED


def test_the_sweep_spends_an_ended_jobs_batch_that_a_blind_provider_may_have(
        app, clock, tmp_path):
    blind = Blind(tmp_path / "blind", complete_after_s=3600, now=clock.time)
    app.add_batch_provider(blind)
    _job(app)
    job = app.submit("gen")
    _crash_at(app, "batch_submitted")
    clock.advance(7200)
    app.store.expire_leases()
    app.cancel(job.id)
    assert _sweep(app, clock) == 1
    (b,) = app.batches(job.id)
    assert b.status == "unconfirmed" and b.settled_usd == b.reserved_usd
    used = app.get(job.id).budget.used
    assert used.reserved_usd == 0 and used.spent_usd == b.reserved_usd
    assert all(not r.confirmed for r in app.ledger(job.id))


def test_the_sweep_leaves_a_live_jobs_unsent_batch_to_its_replay(app, clock, sim):
    _job(app)
    job = app.submit("gen")
    _crash_at(app, "batch_submitted")
    clock.advance(7200)
    app.store.expire_leases()
    assert app.get(job.id).state not in (JobState.CANCELLED, JobState.FAILED)
    assert _sweep(app, clock) == 0
    (b,) = app.batches(job.id)
    assert b.status == "submitting" and _reserved(app, job.id)[1] == len(REQUESTS)


def test_prune_keeps_a_job_until_its_batch_is_settled(app, clock, sim):
    """A pruned job's batch would go with it while its reservation stays counted in the
    project for good: a job with a batch not yet settled is not pruned."""
    _job(app)
    job = app.submit("gen")
    run_next(app)
    app.cancel(job.id)
    clock.advance(7200)
    assert app.prune(older_than_s=60) == 0
    assert app.project_budget(job.project).used.reserved_usd > 0
    assert _sweep(app, clock) == 1
    assert app.prune(older_than_s=60) == 1
    assert app.project_budget(job.project).used.reserved_usd == 0


def test_a_parents_cancel_releases_its_childs_unsent_batch(app, clock, sim):
    """The cancel reaches a child that ran and died before its upload (its attempt counted):
    the child's reservation goes back in the parent's cancel; a queued child is not looked at."""
    _job(app)

    @app.job("parent")
    def parent(ctx, payload):
        kids = [ctx.enqueue("gen", None, key=k) for k in ("ran", "queued")]
        return ctx.gather(kids)
    top = app.submit("parent")
    run_next(app)  # enqueues both children, parks
    _crash_at(app, "batch_uploading")  # the first child reserves, dies before its upload
    ran, queued = sorted((j for j in app.list(limit=10) if j.parent_id == top.id),
                         key=lambda j: j.id)
    assert _reserved(app, ran.id)[1] == len(REQUESTS)
    clock.advance(7200)
    app.store.expire_leases()
    app.cancel(top.id)
    assert {app.get(j.id).state for j in (ran, queued)} == {JobState.CANCELLED}
    assert app.batches(ran.id) == [] and _reserved(app, ran.id) == (0, 0)
    assert app.project_budget(top.project).used.reserved_usd == 0
    assert sim.uploads == []
