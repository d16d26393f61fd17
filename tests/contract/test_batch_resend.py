"""Failed items of a provider batch sent again by policy (``core.batches.Resend``), on every
backend: each round a new batch of the allowed failures, reserved, waited on and settled as the
first; the replay returns every round's recorded answers and sends nothing twice."""

import pytest

from tether import Estimate, JobState
from tether.core.batches import BatchFailure, Resend
from tether.providers.batches import SimulatedBatches, item_failure
from tether.worker.batch_poller import BatchPoller

from tests.contract.test_waits import run_next

EST = Estimate(input_tokens=100, max_output_tokens=50)
REQUESTS = {f"q{i}": {"prompt": f"question {i}", "max_tokens": 50} for i in range(3)}
RATE_LIMITED = (429, {"error": {"message": "rate limited", "type": "rate_limit_error"}})
TOO_LONG = (400, {"error": {"message": "maximum context length",
                            "code": "context_length_exceeded"}})


class Failing(SimulatedBatches):
    """The simulated batch provider whose n-th upload fails the items ``fail[n]`` names."""

    def __init__(self, *args, fail, **kwargs):
        super().__init__(*args, **kwargs)
        self.fail, self.uploads, self.sent = fail, [], []

    def submit(self, **kwargs):
        remote = super().submit(**kwargs)
        self.uploads.append(remote)
        self.sent.append(sorted(kwargs["requests"]))
        return remote

    def results(self, remote_id):
        got = super().results(remote_id)
        n = self.uploads.index(remote_id)
        for key, failure in self.fail.get(n, {}).items():
            if key in got:
                got[key] = item_failure(*failure)
        return got


def _run(app, clock, sim, resend):
    @app.job("gen")
    def gen(ctx, payload):
        answers = ctx.batch(key="gen", provider="simulated", model="sim-small",
                            requests=REQUESTS, estimate=EST, resend=resend)
        return {k: v.error_code if isinstance(v, BatchFailure) else "ok"
                for k, v in answers.items()}
    job = app.submit("gen")
    poller = BatchPoller(app.store, app, interval=1)
    for _ in range(10):
        done = run_next(app)
        if done is None or done.state != JobState.WAITING:
            break
        clock.advance(3600)
        assert poller.run_once() == 1
    return app.get(job.id)


@pytest.fixture
def make(app, clock, tmp_path):
    def make(fail):
        sim = Failing(tmp_path / "batches", complete_after_s=3600, now=clock.time, fail=fail)
        app.add_batch_provider(sim)
        return sim
    return make


def test_retryable_failures_are_sent_again_as_a_new_batch(app, clock, make):
    sim = make({0: {"q1": RATE_LIMITED, "q2": TOO_LONG}})
    done = _run(app, clock, sim, resend=2)
    assert done.state == JobState.SUCCEEDED
    assert done.result == {"q0": "ok", "q1": "ok", "q2": "provider_error"}
    assert sim.sent == [["q0", "q1", "q2"], ["q1"]], "only the retryable item, once"
    assert [b.key for b in app.batches(done.id)] == ["batch:gen", "batch:gen#resend1"]
    assert sorted(r.key for r in app.ledger(done.id)) == [
        "batch:gen#resend1/q1", "batch:gen/q0"]
    assert app.get(done.id).budget.used.reserved_usd == 0


def test_resends_stop_after_their_rounds(app, clock, make):
    sim = make({n: {"q1": RATE_LIMITED} for n in range(5)})
    done = _run(app, clock, sim, resend=Resend(rounds=2))
    assert done.state == JobState.SUCCEEDED and done.result["q1"] == "transient"
    assert sim.sent == [["q0", "q1", "q2"], ["q1"], ["q1"]]


def test_codes_choose_exactly_which_failures_are_sent_again(app, clock, make):
    sim = make({0: {"q1": RATE_LIMITED, "q2": TOO_LONG}})
    done = _run(app, clock, sim, resend=Resend(codes={"provider_error"}))
    assert sim.sent == [["q0", "q1", "q2"], ["q2"]]
    assert done.result["q2"] == "ok" and done.result["q1"] == "transient"


def test_no_resend_by_default(app, clock, make):
    sim = make({0: {"q1": RATE_LIMITED}})
    done = _run(app, clock, sim, resend=None)
    assert sim.sent == [["q0", "q1", "q2"]] and done.result["q1"] == "transient"


def test_a_bad_policy_is_refused(app, clock, make):
    make({})

    @app.job("bad")
    def bad(ctx, payload):
        ctx.batch(key="b", provider="simulated", model="sim-small", requests=REQUESTS,
                  estimate=EST, resend=-1)
    app.submit("bad")
    done = run_next(app)
    assert done.state == JobState.FAILED and done.error_code == "invalid_call"
