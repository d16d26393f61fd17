"""pydantic-ai and the OpenAI Agents SDK inside tether jobs, in-process, on both backends: the
real libraries against the provider server (``AGENT:<n>``: n tool calls, then a structured
answer). Every model request is one journaled, budgeted call; a budget stop pauses the agent
and raising the limit continues it without paying twice; a changed prompt on replay follows
the journal's change policy."""

import os
import subprocess
import sys
from decimal import Decimal

import pytest

from tether import Budget, JobState, Tether
from tether.job import Lease
from tether.worker.executor import execute
from tests.apps import agents
from tests.procs import CHILD_PYTHONPATH, ROOT
from tests.provider_server import FakeProviderServer

FRAMEWORKS = ["pydantic_agent", "sdk_agent"]
PER_REQUEST = (200 * Decimal("0.15") + 1000 * Decimal("0.075") + 300 * Decimal("0.60")) / 10**6
"""gpt-4o-mini, the server's usage: 1,200 input tokens (1,000 cached), 300 output."""


@pytest.fixture(scope="module")
def server():
    with FakeProviderServer() as s:
        yield s


@pytest.fixture
def agent_app(database_url, server, clock, monkeypatch, tmp_path):
    monkeypatch.setenv("TETHER_TEST_PROVIDER_URL", server.url)
    monkeypatch.setenv("TETHER_AGENT_EFFECTS", str(tmp_path / "effects"))
    monkeypatch.delenv("TETHER_AGENT_KILL_AT", raising=False)
    server.requests.clear()
    server.streams.clear()
    server.asked.clear()
    app = Tether(database_url, clock=clock)
    app.registry = agents.app.registry
    yield app
    app.close()


def run_once(app, job_id):
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    assert c.job.id == job_id
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(job_id)


def bill(server):
    """The agent steps the provider answered, in order (``agent-<tool results sent>``)."""
    return [mode for _, mode in server.requests if mode.startswith("agent-")]


def effects(tmp_path):
    path = tmp_path / "effects"
    return path.read_text().split() if path.exists() else []


@pytest.mark.parametrize("kind", FRAMEWORKS)
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_each_model_request_is_one_journaled_budgeted_call(agent_app, server, tmp_path, kind,
                                                           stream):
    job = agent_app.submit(kind, {"prompt": "Go. AGENT:3", "stream": stream})
    done = run_once(agent_app, job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    assert done.result == {"steps": 3, "summary": "3 steps", "requests": 4,
                           **({"live": True} if stream else {})}, "streamed before settled"
    assert bill(server) == ["agent-0", "agent-1", "agent-2", "agent-3"]
    assert server.streams == (bill(server) if stream else [])
    assert effects(tmp_path) == ["0", "1", "2"]
    ledger = agent_app.ledger(job.id)
    assert [r.key for r in ledger] == [f"steps/model/{n}" for n in (1, 2, 3, 4)]
    assert {(r.input_tokens, r.output_tokens, r.cached_input_tokens, r.reasoning_tokens)
            for r in ledger} == {(1200, 300, 1000, 100)}
    assert all(r.cost_usd == PER_REQUEST and r.confirmed for r in ledger)
    limits = {b.get("max_completion_tokens") or b.get("max_tokens") for b in server.asked}
    assert limits == {500}, "every request carries the output limit its reservation assumed"
    journal = agent_app.journal(job.id)
    assert all(e.status == "done" and e.reserved_usd >= e.cost_usd for e in journal)
    assert {e.stage for e in journal} == {None}, "recorded in the job's stage, not a tool's"
    assert done.stage is None
    assert done.budget.used.spent_usd == 4 * PER_REQUEST
    assert done.budget.used.reserved_usd == 0
    stages = [c.stage for c in agent_app.checkpoints(job.id)]
    assert stages == [f"steps/tool/{n + 1}/step/call_{n}" for n in range(3)]


@pytest.mark.parametrize("kind", FRAMEWORKS)
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_a_budget_stop_pauses_the_agent_and_a_raised_limit_continues_it(agent_app, server,
                                                                        tmp_path, kind, stream):
    job = agent_app.submit(kind, {"prompt": "Go. AGENT:3", "stream": stream},
                           budget=Budget(max_calls=2))
    paused = run_once(agent_app, job.id)
    assert paused.state == JobState.PAUSED and paused.error_code == "budget_exhausted"
    assert bill(server) == ["agent-0", "agent-1"], "the third request was never sent"
    assert paused.budget.used.spent_usd == 2 * PER_REQUEST
    assert paused.budget.used.reserved_usd == 0
    agent_app.set_budget(job.id, max_calls=10)
    done = run_once(agent_app, job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    assert done.result["steps"] == 3
    assert bill(server) == ["agent-0", "agent-1", "agent-2", "agent-3"], "none paid twice"
    assert effects(tmp_path) == ["0", "1", "2"], "a checkpointed tool ran once"
    assert done.budget.used.spent_usd == 4 * PER_REQUEST
    assert len(agent_app.ledger(job.id)) == 4


@pytest.mark.parametrize("kind", FRAMEWORKS)
@pytest.mark.parametrize("decision", ["reuse", "repay"])
def test_a_changed_prompt_on_replay_follows_the_change_policy(agent_app, server, monkeypatch,
                                                              kind, decision):
    job = agent_app.submit(kind, {"prompt": "Go. AGENT:3"}, budget=Budget(max_calls=2))
    assert run_once(agent_app, job.id).error_code == "budget_exhausted"
    monkeypatch.setattr(agents, "INSTRUCTIONS", "Take the steps, then report briefly.")
    agent_app.set_budget(job.id, max_calls=10)
    changed = run_once(agent_app, job.id)
    assert changed.state == JobState.PAUSED and changed.error_code == "journal_mismatch"
    assert "steps/model/1" in changed.error_summary
    assert bill(server) == ["agent-0", "agent-1"], "nothing paid for a change paused on"
    agent_app.resume(job.id, on_change=decision)
    done = run_once(agent_app, job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    if decision == "reuse":
        assert bill(server) == ["agent-0", "agent-1", "agent-2", "agent-3"]
        assert len(agent_app.ledger(job.id)) == 4
    else:
        assert bill(server) == ["agent-0", "agent-1", "agent-0", "agent-1", "agent-2",
                                "agent-3"], "the two changed requests paid again"
        assert len(agent_app.ledger(job.id)) == 6


@pytest.mark.parametrize("kind", FRAMEWORKS)
@pytest.mark.parametrize("mode,state,code", [
    ("429", JobState.RETRY_WAIT, "transient"), ("401", JobState.PAUSED, "provider_auth"),
    ("context", JobState.FAILED, "provider_error")])
def test_a_provider_error_inside_the_agent_is_classified(agent_app, kind, mode, state, code):
    job = agent_app.submit(kind, {"prompt": f"Go. AGENT:2 MODE:{mode}"})
    failed = run_once(agent_app, job.id)
    assert (failed.state, failed.error_code) == (state, code), failed.error_summary
    assert failed.budget.used.spent_usd == 0 and failed.budget.used.reserved_usd == 0


@pytest.mark.parametrize("how", ["named", "run_config"])
def test_an_sdk_model_named_by_a_string_or_the_run_config_is_journaled(agent_app, server, how):
    job = agent_app.submit("sdk_agent", {"prompt": "Go. AGENT:2", how: True})
    done = run_once(agent_app, job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    assert bill(server) == ["agent-0", "agent-1", "agent-2"]
    assert [e.key for e in agent_app.journal(job.id)] == [f"steps/model/{n}" for n in (1, 2, 3)]
    assert {e.model for e in agent_app.journal(job.id)} == {"gpt-4o-mini"}


def test_a_known_context_window_bounds_the_input_reserved(agent_app, server):
    job = agent_app.submit("pydantic_agent", {"prompt": "Go. AGENT:1"})
    done = run_once(agent_app, job.id)
    unbounded = [e.reserved_usd for e in agent_app.journal(job.id)]
    job = agent_app.submit("pydantic_agent", {"prompt": "Go. AGENT:1", "window": 700})
    done = run_once(agent_app, job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    # gpt-4o-mini, worst case: 700 input tokens at $0.15/M, 500 output at $0.60/M
    bounded = [e.reserved_usd for e in agent_app.journal(job.id)]
    assert bounded == [(700 * Decimal("0.15") + 500 * Decimal("0.60")) / 10**6] * 2
    assert all(u > b for u, b in zip(unbounded, bounded, strict=True)), \
        "without the window, the request's length (over 700 bytes) is the bound"


def test_a_def_job_runs_the_agent_through_run_sync(agent_app, server, tmp_path):
    job = agent_app.submit("pydantic_agent_sync", {"prompt": "Go. AGENT:3"},
                           budget=Budget(max_calls=2))
    assert run_once(agent_app, job.id).error_code == "budget_exhausted"
    agent_app.set_budget(job.id, max_calls=10)
    done = run_once(agent_app, job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    assert done.result == {"steps": 3, "summary": "3 steps", "requests": 4}
    assert bill(server) == ["agent-0", "agent-1", "agent-2", "agent-3"]
    assert effects(tmp_path) == ["0", "1", "2"]


def test_an_sdk_agent_on_the_responses_api_resumes_from_the_journal(agent_app, server):
    job = agent_app.submit("sdk_agent", {"prompt": "Go. AGENT:3", "responses": True},
                           budget=Budget(max_calls=2))
    assert run_once(agent_app, job.id).error_code == "budget_exhausted"
    agent_app.set_budget(job.id, max_calls=10)
    done = run_once(agent_app, job.id)
    assert done.state == JobState.SUCCEEDED, done.error_summary
    assert done.result == {"steps": 3, "summary": "3 steps", "requests": 4}
    assert bill(server) == ["agent-0", "agent-1", "agent-2", "agent-3"]
    assert {p for p, _ in server.requests} == {"/v1/responses"}
    ledger = agent_app.ledger(job.id)
    assert {(r.input_tokens, r.output_tokens, r.cached_input_tokens, r.reasoning_tokens)
            for r in ledger} == {(500, 80, 200, 30)} and len(ledger) == 4


def test_the_example_runs_on_the_provider_server(server, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env.update(PYTHONPATH=CHILD_PYTHONPATH, TETHER_AGENT_BASE_URL=f"{server.url}/v1")
    server.requests.clear()
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "agent.py")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "succeeded: 3 model requests, 3 paid" in run.stdout
    assert bill(server) == ["agent-0", "agent-1", "agent-2"]
