"""A row becomes the same ``Job`` whichever way it is built: ``to_job`` skips the frozen
dataclass's ``__init__`` for speed, so it must set every field and nothing else."""

from __future__ import annotations

import dataclasses
from datetime import datetime, UTC
from decimal import Decimal

from tether.core.states import JobState
from tether.records import Job
from tether.store.rows import _JOB_FIELDS, to_job

ROW = {
    "id": 7, "type": "t", "project": "p", "queue": "q", "state": "running", "stage": "s1",
    "attempt_count": 2, "max_attempts": 3, "idempotency_key": "k", "input_config_hash": "h",
    "priority": -1, "run_after": 1_700_000_000.5, "error_code": "e", "error_summary": "boom",
    "result": '{"a": [1, 2]}', "budget": '{"max_calls": 5}', "lease_owner": "w",
    "lease_expires_at": datetime(2026, 1, 2, tzinfo=UTC), "created_at": 1_700_000_000.0,
    "updated_at": 1_700_000_001.0, "payload": "null", "safe_to_retry": 1, "lease_attempt": 2,
    "finished_at": None, "price_profile": "pp", "estimated_cost_usd": "0.25", "parent_id": 3,
    "trace_context": None, "event_seq": 9, "claimed_at": 1.0,
}


def test_to_job_sets_every_field_as_the_constructor_would():
    job = to_job(ROW)
    assert set(vars(job)) == _JOB_FIELDS == {f.name for f in dataclasses.fields(Job)}
    rebuilt = Job(**{name: getattr(job, name) for name in _JOB_FIELDS})
    assert job == rebuilt
    assert dataclasses.replace(job, stage=None).stage is None
    assert job.state is JobState.RUNNING and job.payload is None
    assert job.result == {"a": [1, 2]} and job.budget.limits.max_calls == 5
    assert job.estimated_cost_usd == Decimal("0.25")
    assert job.run_after == datetime.fromtimestamp(1_700_000_000.5, UTC)
    try:
        job.stage = "x"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a job must stay frozen")
