"""A call's bad arguments fail the job as ``invalid_call`` before anything is reserved — on
every backend."""

from tether import Estimate, JobState
from tether.job import Lease
from tether.worker.executor import execute

S = JobState
ESTIMATE = Estimate(input_tokens=10, max_output_tokens=50)


def claim_and_run(app):
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.token))
    return app.get(c.job.id)


def test_cache_without_request_fails_as_invalid_call_before_any_reservation(app):
    made = []

    @app.job("cached")
    def cached(ctx, payload):
        return ctx.call(key="k", provider="simulated", model="sim-small", estimate=ESTIMATE,
                        cache=True, fn=lambda: made.append(1))

    job = app.submit("cached", {})
    got = claim_and_run(app)
    assert got.state == S.FAILED and got.error_code == "invalid_call"
    assert "request=" in got.error_summary
    assert made == [] and app.journal(job.id) == [] and app.ledger(job.id) == []
    assert got.budget.used.reserved_calls == 0 and got.budget.used.calls == 0
