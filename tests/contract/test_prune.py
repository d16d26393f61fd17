"""Prune deletes old finished jobs with their history, a batch a transaction, on every backend."""

from datetime import datetime, timezone
from decimal import Decimal

import pytest

from tether import JobNotFound, JobState, Usage
from tether.errors import InvalidArgument
from tether.fleet import WorkerInfo
from tether.store.base import Outcome
from tests.contract.test_context import claim_and_run
from tests.money import PRICE, reserve, running_job


def _boom(ctx, payload):
    raise RuntimeError("boom")


def _history(app, job_id):
    return len(app.store.events(job_id)), len(app.store.attempts(job_id))


def test_prune_takes_old_finished_jobs_in_batches_and_keeps_the_rest(app, clock):
    app.register("ok", lambda ctx, payload: None)
    app.register("bad", _boom, max_attempts=1)
    old = []
    for kind in ("ok", "bad", "ok", "ok", "bad"):
        app.submit(kind)
        old.append(claim_and_run(app).id)
        clock.advance(10)
    cancelled = app.cancel(app.submit("ok").id)
    assert cancelled.state == JobState.CANCELLED
    old.append(cancelled.id)
    paused = app.pause(app.submit("ok").id)  # old but not finished: never pruned
    assert all(_history(app, j)[0] > 0 for j in old)
    clock.advance(3600)
    app.submit("ok")
    recent = claim_and_run(app)
    assert recent.state == JobState.SUCCEEDED

    assert app.store.prune(older_than_s=60, batch=2) == len(old)

    for job_id in old:
        with pytest.raises(JobNotFound):
            app.get(job_id)
        assert _history(app, job_id) == (0, 0)
    assert app.get(paused.id).state == JobState.PAUSED
    assert app.get(recent.id).state == JobState.SUCCEEDED
    assert _history(app, recent.id)[1] == 1
    assert app.store.prune(older_than_s=60, batch=2) == 0


def test_jobs_finished_at_the_same_instant_all_go_whatever_the_batch(app, clock):
    """A batch resumes from the last one's newest finish time, ties included."""
    app.register("ok", lambda ctx, payload: None)
    ids = []
    for _ in range(3):
        app.submit("ok")
        ids.append(claim_and_run(app).id)
    assert len({app.get(j).finished_at for j in ids}) == 1
    clock.advance(120)
    assert app.prune(older_than_s=60) == 3  # the facade: what `tether prune` calls
    for _ in range(3):
        app.submit("ok")
        claim_and_run(app)
    clock.advance(120)
    assert app.store.prune(older_than_s=60, batch=1) == 3
    assert app.list() == []


def test_a_batch_below_one_is_refused(app):
    with pytest.raises(InvalidArgument):
        app.store.prune(older_than_s=60, batch=0)


def _budget_rows(app):
    with app.store._read() as tx:
        rows = tx.conn.execute("SELECT scope, key FROM budgets").fetchall()
    return {(r["scope"], r["key"]) for r in rows}


def test_a_pruned_jobs_own_budget_row_goes_with_it(app, clock):
    """Every job that makes a call gets a budget row of its own; a prune takes it with the
    job (else the table keeps a row per job ever run), and keeps the project's."""
    old, tok = running_job(app, project="p")
    reserve(app, old, tok, "a")
    app.store.settle(old.id, tok, key="a", usage=Usage(100, 50), price=PRICE,
                     profile_id="p", result_json="1")
    app.store.finish(old.id, tok, Outcome(JobState.SUCCEEDED, result_json="null"))
    clock.advance(3600)
    recent, tok2 = running_job(app, project="p")
    reserve(app, recent, tok2, "a")
    assert _budget_rows(app) == {("job", str(old.id)), ("job", str(recent.id)), ("project", "p")}
    spent = app.get(old.id).budget.spent_usd
    assert spent > 0

    assert app.prune(older_than_s=60) == 1
    assert _budget_rows(app) == {("job", str(recent.id)), ("project", "p")}
    assert app.get(recent.id).budget.reserved_usd == Decimal("0.10")
    project = app.project_budget("p")
    assert (project.spent_usd, project.reserved_usd) == (spent, Decimal("0.10"))


def _workers(app):
    return {w.id for w in app.workers(include_stopped=True)}


def test_prune_forgets_workers_gone_before_its_cutoff_but_not_one_holding_a_lease(app, clock):
    app.register("t", lambda ctx, payload: payload)
    now = datetime.now(timezone.utc)
    for name in ("stopped", "killed", "holding", "live"):
        app.store.register_worker(WorkerInfo(name, "h", 1, ["default"], 1, now, now, None))
    app.submit("t", {})
    app.submit("t", {})
    assert len(app.store.claim("killed", queues=None, limit=1, lease_ttl=30)) == 1
    assert len(app.store.claim("holding", queues=None, limit=1, lease_ttl=7200)) == 1
    app.store.stop_worker("stopped")
    clock.advance(3600)
    app.store.heartbeat("live", lease_ttl=30)
    app.prune(older_than_s=60)
    assert _workers(app) == {"holding", "killed", "live"}  # its lease not yet taken back

    assert len(app.store.expire_leases()) == 1  # the rescuer takes back the killed one's
    app.prune(older_than_s=60)
    assert _workers(app) == {"holding", "live"}
    assert app.engine_stats()["claims_total"] == 2


def test_a_worker_forgotten_while_silent_registers_again_at_its_next_heartbeat(app, clock):
    app.register("t", lambda ctx, payload: payload)
    now = datetime.now(timezone.utc)
    app.store.register_worker(WorkerInfo("w", "h", 7, ["q"], 3, now, now, None))
    clock.advance(3600)
    app.prune(older_than_s=60)
    assert _workers(app) == set()

    app.store.heartbeat("w", lease_ttl=30)
    (back,) = app.workers()
    assert (back.id, back.hostname, back.pid, back.queues, back.concurrency) == (
        "w", "h", 7, ["q"], 3)
