"""Running totals (store/totals.py): spend and engine counts equal the history they count,
pruning the history leaves them as they were, and the jobs-by-state gauge /metrics reads
counts finished states only up to a cap — on every backend."""

from decimal import Decimal

from tether import Budget, Estimate, JobState, Usage
from tether.job import Lease
from tether.providers.simulated import SimulatedProvider
from tether.store.base import Outcome
from tether.worker.executor import execute

from tests.money import PRICE, reserve, running_job

S = JobState


def _ledger_totals(app, job_ids):
    rows = [row for job_id in job_ids for row in app.ledger(job_id)]
    return (len(rows), sum(r.input_tokens for r in rows), sum(r.output_tokens for r in rows),
            sum((r.cost_usd for r in rows), Decimal(0)), sum(1 for r in rows if not r.confirmed))


def _engine_counters(app):
    with app.store._read() as tx:
        rows = tx.conn.execute("SELECT name, owner, n FROM engine_counters").fetchall()
    return {(r["name"], r["owner"]): int(r["n"]) for r in rows}


def _totals(app):
    (row,) = app.spend_totals()
    return (row["calls"], row["input_tokens"], row["output_tokens"], row["cost_usd"],
            row["unconfirmed_calls"])


def test_totals_equal_the_history_and_outlive_its_prune(app, clock):
    settled, tok = running_job(app, project="p1")
    for key in ("a", "b"):
        reserve(app, settled, tok, key)
        app.store.settle(settled.id, tok, key=key, usage=Usage(1000, 200), price=PRICE,
                         profile_id="p", result_json="1")
    app.store.finish(settled.id, tok, Outcome(JobState.SUCCEEDED, result_json="null"))
    orphaned, tok2 = running_job(app, project="p2")
    reserve(app, orphaned, tok2, "in-flight", cost="0.30", tin=300, tout=100)
    clock.advance(31)
    assert [j for j, _ in app.store.expire_leases()] == [orphaned.id]
    app.cancel(orphaned.id)

    history = _ledger_totals(app, [settled.id, orphaned.id])
    assert history == (3, 2300, 500, Decimal("0.3016"), 1)
    assert _totals(app) == history
    assert app.spent_projects() == ["p1", "p2"]
    assert [r["calls"] for r in app.spend_totals(projects=["p2"])] == [1]
    stats = app.engine_stats()
    assert (stats["claims_total"], stats["lease_expiries_total"]) == (2, 1)

    clock.advance(3600)
    assert app.prune(older_than_s=60) == 2
    with app.store._read() as tx:
        assert tx.all("list_ledger", job_id=settled.id) == []
    assert _totals(app) == history
    stats = app.engine_stats()
    assert (stats["claims_total"], stats["lease_expiries_total"]) == (2, 1)


def test_each_worker_counts_its_claims_in_its_own_row(app):
    app.register("t", lambda ctx, payload: payload)
    for _ in range(5):
        app.submit("t", {})
    assert len(app.store.claim("w1", queues=None, limit=3, lease_ttl=30)) == 3
    assert len(app.store.claim("w2", queues=None, limit=3, lease_ttl=30)) == 2
    assert app.store.claim("w2", queues=None, limit=3, lease_ttl=30) == []
    rows = _engine_counters(app)
    assert {(owner, n) for (name, owner), n in rows.items() if name == "claims"} == {
        ("w1", 3), ("w2", 2)}
    assert app.engine_stats()["claims_total"] == 5


def test_prune_folds_the_counts_of_workers_gone_before_its_cutoff(app, clock):
    from datetime import datetime, timezone
    from tether.fleet import WorkerInfo

    app.register("t", lambda ctx, payload: payload)
    now = datetime.now(timezone.utc)
    for name in ("gone", "live"):
        app.store.register_worker(WorkerInfo(name, "h", 1, ["default"], 1, now, now, None))
        app.submit("t", {})
        app.submit("t", {})
        assert len(app.store.claim(name, queues=None, limit=2, lease_ttl=30)) == 2
    app.store.stop_worker("gone")
    clock.advance(3600)
    app.store.heartbeat("live", lease_ttl=30)
    app.store.expire_leases()  # the stopped worker's leases, taken back
    app.prune(older_than_s=60)
    assert _engine_counters(app) == {("claims", ""): 2, ("claims", "live"): 2,
                                     ("lease_expiries", ""): 2}
    assert app.engine_stats()["claims_total"] == 4
    app.prune(older_than_s=60)  # nothing left to fold: the totals stay
    assert app.engine_stats()["claims_total"] == 4


def test_a_budget_pause_is_counted(app, tmp_path):
    provider = SimulatedProvider(tmp_path / "bill.jsonl")

    @app.job("generate")
    def generate(ctx, payload):
        for i in range(3):
            ctx.call(key=f"g{i}", provider="simulated", model="sim-small",
                     estimate=Estimate(input_tokens=10, max_output_tokens=50),
                     fn=lambda i=i: provider.complete(f"x {i}", key=f"g{i}", max_tokens=50,
                                                      job_id=ctx.id))
            ctx.add_examples(1)

    app.submit("generate", {}, budget=Budget(max_examples=1))
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    got = app.get(c.job.id)
    assert got.state == S.PAUSED and got.error_code == "budget_exhausted"
    assert app.engine_stats()["budget_pauses_total"] == 1
    assert _totals(app)[0] == 1


def test_queue_counts_estimate_only_beyond_the_cap(app, backend):
    app.register("t", lambda ctx, payload: payload)
    app.register("bad", _boom, max_attempts=1)
    for _ in range(5):
        app.submit("t", {})
    app.submit("bad", {})
    for _ in range(6):
        (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
        execute(app, c.job, Lease(c.job.id, c.attempt))
    app.submit("t", {}, queue="other")
    app.pause_queue("other")
    exact = {q.name: (q.paused, q.counts) for q in app.queues()}
    assert exact == {"default": (False, {"succeeded": 5, "failed": 1}),
                     "other": (True, {"queued": 1})}
    assert {q.name: (q.paused, q.counts) for q in app.queues(estimate=True)} == exact
    if backend == "postgres":  # the estimate comes from the planner's statistics
        with app.store._write() as tx:
            tx.conn.execute("ANALYZE jobs")
    capped = {q.name: q.counts for q in app.store.queue_counts(cap=3)}
    assert capped["other"] == {"queued": 1}
    assert capped["default"]["failed"] == 1
    assert capped["default"]["succeeded"] >= 3
    if backend == "sqlite":  # no statistics: counted
        assert capped["default"]["succeeded"] == 5


def _boom(ctx, payload):
    raise RuntimeError("boom")


def test_a_metrics_scrape_reads_the_totals_never_the_ledger(app, clock):
    from fastapi.testclient import TestClient

    from tether.api.server import create_app
    from tests.statements import recorded
    app.set_project_budget("p1", max_cost_usd="5")
    app.set_project_budget("p2", max_cost_usd="9", period="day")
    settled, tok = running_job(app, project="p1")
    reserve(app, settled, tok, "a")
    app.store.settle(settled.id, tok, key="a", usage=Usage(1000, 200), price=PRICE,
                     profile_id="p", result_json="1")
    flying, tok2 = running_job(app, project="p2")
    reserve(app, flying, tok2, "a")
    app.store.settle(flying.id, tok2, key="a", usage=Usage(1000, 200), price=PRICE,
                     profile_id="p", result_json="1")
    reserve(app, flying, tok2, "in-flight", cost="0.30")
    client = TestClient(create_app(app, auth=False))

    with recorded() as statements:
        before = client.get("/metrics").text
    assert [name for name, sql, _ in statements if "cost_ledger" in sql] == []
    assert 'tether_project_spent_usd{project="p1"} 0.0008' in before
    assert 'tether_project_reserved_usd{project="p2"} 0.3' in before
    assert 'tether_project_budget_limit_usd{project="p1"} 5.0' in before
    assert 'tether_project_period_used_usd{period="day",project="p2"} 0.3008' in before
    assert 'tether_project_period_limit_usd{period="day",project="p2"} 9.0' in before
    assert 'tether_spend_usd_total{model="sim-small",provider="simulated"} 0.0016' in before
    with app.store._write() as tx:  # what the scrape shows is kept beside the ledger
        tx.conn.execute("DELETE FROM cost_ledger")
    assert client.get("/metrics").text == before
