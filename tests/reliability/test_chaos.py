"""The chaos runner, bounded, in the suite (``bench/chaos.py`` runs it for as long as you like).

Workers are SIGKILLed and replaced every few seconds while multi-stage LLM jobs with budgets
run on the simulated provider (latency, 429s, refusals), some forked from a stage and some
retried from a stage after failing; on PostgreSQL a private server is crashed and restarted
mid-run. Every invariant of ``tether.testing.invariants`` must hold.
"""

from __future__ import annotations

import pytest

from bench.chaos import Config, report, run
from tether.testing.invariants import describe

pytestmark = pytest.mark.slow


def _check(result) -> None:
    report(result)
    assert result.ok, describe(result.checks)
    s = result.stats
    assert s["drained"] and s["worker_exits_unasked"] == 0
    assert s["kills"] >= 5 and s["attempts_lost_to_kills"] >= 3, s
    assert s["states"].get("succeeded", 0) > 0 and s["states"].get("paused", 0) > 0, s
    assert s["children"] > 0 and s["workflows"].get("chaos_approval", 0) > 0, s
    assert s["forks"] > 0 and s["calls_carried"] > 0, s
    assert s["retries_from_stage"] > 0 and s["calls_repaid"] > 0, s


def test_chaos_sqlite(tmp_path):
    _check(run(Config(minutes=0.75, backend="sqlite", jobs=150, out=tmp_path, quiet=True,
                      seed=11, retry_share=0.15)))


@pytest.mark.postgres
def test_chaos_postgres_with_a_server_restart(tmp_path):
    from tests.conftest import require_postgres
    from tests.pg import PG_BIN
    require_postgres()
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no initdb in {PG_BIN} for a private server")
    result = run(Config(minutes=0.4, backend="postgres", jobs=80, kill_every=2.0, out=tmp_path,
                        quiet=True, seed=12, fork_share=0.2, retry_share=0.15))
    _check(result)
    assert result.stats["pg_restarts"] == 1
