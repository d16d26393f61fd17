"""A real worker process running an agent (pydantic-ai, the Agents SDK) SIGKILLed between
model requests — inside the third step's tool, before its side effect — or while a model
request is in flight, then a new worker: the run resumes from the journal, and the provider
server's own bill shows each model request once (the one in flight at the kill twice: its
reservation spent, unconfirmed), and the side-effect file each checkpointed step once."""

import os
import signal

import pytest

from tether import JobState, Tether
from tests.apps import agents
from tests.procs import start_worker, stop, wait_until
from tests.provider_server import FakeProviderServer

pytestmark = pytest.mark.slow
APP = "tests.apps.agents:app"


def _expire(app, backend, job_id):
    """The killed worker's lease, backdated (what its TTL would do, without waiting)."""
    sql = ("UPDATE jobs SET lease_expires_at = 0 WHERE id = ?" if backend == "sqlite" else
           "UPDATE jobs SET lease_expires_at = now() - interval '1 hour' WHERE id = %s")
    with app.store._write() as tx:
        tx.conn.execute(sql, (job_id,))


@pytest.mark.parametrize("kind", ["pydantic_agent", "sdk_agent"])
def test_sigkill_between_steps_resumes_paying_each_request_once(backend, database_url,
                                                                tmp_path, kind):
    flag, effects = tmp_path / "killed", tmp_path / "effects"
    with FakeProviderServer() as server:
        env = {"TETHER_TEST_PROVIDER_URL": server.url, "TETHER_AGENT_EFFECTS": str(effects),
               "TETHER_AGENT_KILL_AT": "2", "TETHER_AGENT_KILL_FLAG": str(flag)}
        app = Tether(database_url)
        app.registry = agents.app.registry
        job = app.submit(kind, {"prompt": "Go. AGENT:4"})
        first = start_worker(database_url, app=APP, env=env, log=tmp_path / "w1.log")
        try:
            wait_until(lambda: first.poll() is not None, timeout=120, what="the SIGKILL",
                       log=tmp_path / "w1.log")
        finally:
            stop(first)
        assert flag.read_text() == "2"
        billed = [m for _, m in server.requests if m.startswith("agent-")]
        assert billed == ["agent-0", "agent-1", "agent-2"], "killed in the third step's tool"
        assert effects.read_text().split() == ["0", "1"]
        assert app.get(job.id).state == JobState.RUNNING
        _expire(app, backend, job.id)
        second = start_worker(database_url, app=APP, env=env, log=tmp_path / "w2.log")
        try:
            wait_until(lambda: app.get(job.id).state in (JobState.SUCCEEDED, JobState.FAILED,
                                                         JobState.PAUSED),
                       timeout=120, what="the job to finish", watch=second,
                       log=tmp_path / "w2.log")
        finally:
            stop(second)
        done = app.get(job.id)
        assert done.state == JobState.SUCCEEDED, done.error_summary
        assert done.result == {"steps": 4, "summary": "4 steps", "requests": 5}
        billed = [m for _, m in server.requests if m.startswith("agent-")]
        assert billed == [f"agent-{n}" for n in range(5)], "each model request paid once"
        assert effects.read_text().split() == ["0", "1", "2", "3"], "each step taken once"
        ledger = app.ledger(job.id)
        assert [r.key for r in ledger] == [f"steps/model/{n}" for n in range(1, 6)]
        used = done.budget.used
        assert used.reserved_usd == 0 and used.spent_usd == sum(r.cost_usd for r in ledger)
        app.close()


def test_sigkill_with_a_request_in_flight_pays_that_one_again(backend, database_url, tmp_path):
    """What happens to the request in flight is the journal's doing, not the framework's:
    one framework shows it (the test above takes both between steps)."""
    kind = "pydantic_agent"
    effects = tmp_path / "effects"
    with FakeProviderServer() as server:
        env = {"TETHER_TEST_PROVIDER_URL": server.url, "TETHER_AGENT_EFFECTS": str(effects)}
        app = Tether(database_url)
        app.registry = agents.app.registry
        job = app.submit(kind, {"prompt": "Go. AGENT:3"})
        gate = server.hold("agent-2")
        first = start_worker(database_url, app=APP, env=env, log=tmp_path / "w1.log")
        try:
            wait_until(lambda: ("/v1/chat/completions", "agent-2") in server.requests,
                       timeout=120, what="the third request in flight", watch=first,
                       log=tmp_path / "w1.log")
            os.kill(first.pid, signal.SIGKILL)
            first.wait(30)
        finally:
            gate.set()
            stop(first)
        _expire(app, backend, job.id)
        second = start_worker(database_url, app=APP, env=env, log=tmp_path / "w2.log")
        try:
            wait_until(lambda: app.get(job.id).state in (JobState.SUCCEEDED, JobState.FAILED,
                                                         JobState.PAUSED),
                       timeout=120, what="the job to finish", watch=second,
                       log=tmp_path / "w2.log")
        finally:
            stop(second)
        done = app.get(job.id)
        assert done.state == JobState.SUCCEEDED, done.error_summary
        billed = [m for _, m in server.requests if m.startswith("agent-")]
        assert billed == ["agent-0", "agent-1", "agent-2", "agent-2", "agent-3"]
        assert effects.read_text().split() == ["0", "1", "2"]
        ledger = app.ledger(job.id)
        assert [r.key for r in ledger if not r.confirmed] == ["steps/model/3"]
        assert [r.key for r in ledger if r.confirmed] == [f"steps/model/{n}"
                                                          for n in range(1, 5)]
        used = done.budget.used
        assert used.reserved_usd == 0 and used.spent_usd == sum(r.cost_usd for r in ledger)
        app.close()
