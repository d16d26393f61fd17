"""Deployments of changed code for the replay tests: each ``Deploy()`` is a new ``Tether`` on
the same database whose ``writer`` job journals ``gen-1`` in stage ``draft`` (after a ``plan``
stage of a given version) and waits for signal ``go``; the prompt, model, stage version and
policies are its arguments; ``added_stage`` puts a paid ``outline`` stage before ``plan``."""

import pytest

from tether import Estimate, JobState, Tether, stage
from tether.providers.simulated import SimulatedProvider, read_bill
from tests.contract.test_waits import run_next

PROMPT_A = "Write a haiku about tides."
PROMPT_B = "Write a limerick about tides."


class Deploy:
    """One deployment of the ``writer`` job type: a new app on the same database."""

    def __init__(self, database_url, clock, bill, opened):
        self.url, self.clock, self.bill, self.opened = database_url, clock, bill, opened
        self.sim = SimulatedProvider(bill, seed=1)

    def __call__(self, prompt=PROMPT_A, model="sim-small", version=None, on_change="pause",
                 call_on_change=None, request=False, added_stage=False):
        app = Tether(self.url, clock=self.clock)
        self.opened.append(app)
        sim = self.sim

        @stage(version=version)
        def plan(ctx, payload):
            return {"topic": "tides"}

        def outline(ctx, payload):
            return ctx.call(
                key="gen-0", provider="simulated", model=model,
                estimate=Estimate(input_text="Outline tides.", max_output_tokens=20),
                fn=lambda: sim.complete("Outline tides.", key="gen-0", max_tokens=20,
                                        model=model, job_id=ctx.id))

        stages = [outline, plan] if added_stage else [plan]

        @app.job("writer", stages=stages, on_change=on_change)
        def writer(ctx, planned):
            def draft():
                text = ctx.call(
                    key="gen-1", provider="simulated", model=model,
                    estimate=Estimate(input_text=prompt, max_output_tokens=40),
                    request={"prompt": prompt} if request else None, on_change=call_on_change,
                    fn=lambda: sim.complete(prompt, key="gen-1", max_tokens=40, model=model,
                                            job_id=ctx.id))
                ctx.wait_for_signal("go")
                return text
            return ctx.stage("draft", draft)
        return app


@pytest.fixture
def deploy(database_url, clock, tmp_path):
    opened = []
    yield Deploy(database_url, clock, tmp_path / "bill.jsonl", opened)
    for app in opened:
        app.close()


def paused_job(deploy, **change):
    """A writer job paused by ``journal_mismatch``: it paid ``gen-1``, waited, and was
    replayed by changed code (``change``: a new prompt by default)."""
    job = waiting_job(deploy)
    app = deploy(**(change or {"prompt": PROMPT_B}))
    assert run_next(app).error_code == "journal_mismatch"
    return job, app


def waiting_job(deploy, **first):
    """A writer job that paid ``gen-1`` and waits for its signal (sent at once)."""
    app = deploy(**first)
    job = app.submit("writer")
    assert run_next(app).state == JobState.WAITING
    app.signal(job.id, "go", True)
    assert [b.job_id for b in read_bill(deploy.bill)].count(job.id) == 1
    return job


