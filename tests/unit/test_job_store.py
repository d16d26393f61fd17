"""JobStore names exactly what a running job uses of the store: both backends implement it, and
the worker's group-committing view implements it (and claiming and finishing) method by method,
writes through the committer and reads straight from the store."""

from __future__ import annotations

import inspect

import pytest

from tether.job.store import JobStore
from tether.store.base import NewJob
from tether.store.postgres.store import PostgresStore
from tether.store.sqlite.store import SQLiteStore
from tether.worker.committer import CommittingStore, GroupCommitter, WorkerStore


def _methods(protocol: type) -> list[str]:
    return sorted(name for name, value in vars(protocol).items()
                  if callable(value) and not name.startswith("_"))


def _shape(fn) -> list[tuple[str, object, object]]:
    """Parameter names, kinds and defaults (annotations are spelled differently per module)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


WORKER_METHODS = _methods(JobStore) + _methods(WorkerStore)


def test_job_store_names_the_running_jobs_methods() -> None:
    assert _methods(JobStore) == [
        "account", "acquire_rate", "add_examples", "append_event", "batch_answers",
        "batch_refused", "batch_submitted", "batch_unconfirmed", "batch_uploading", "begin_wait",
        "cached_result", "callback_handed", "change_call", "change_stage", "finish", "get_batch",
        "get_checkpoint", "get_wait", "issue_callback", "journal", "lease_state", "patches",
        "record_cached", "release", "replay_decision",
        "reserve_batch", "save_checkpoint", "set_stage", "settle_rate", "start",
        "wait_results"]
    assert _methods(WorkerStore) == ["claim", "finish_many"]


@pytest.mark.parametrize("name", WORKER_METHODS)
def test_committing_store_implements_each_method_itself(name: str) -> None:
    assert "__getattr__" not in vars(CommittingStore)
    own = vars(CommittingStore).get(name)
    assert own is not None, f"CommittingStore does not define {name}"
    declared = getattr(WorkerStore, name)
    assert inspect.signature(own) == inspect.signature(declared)


@pytest.mark.parametrize("backend", [SQLiteStore, PostgresStore])
@pytest.mark.parametrize("name", WORKER_METHODS)
def test_both_backends_implement_each_method(backend: type, name: str) -> None:
    assert _shape(getattr(backend, name)) == _shape(getattr(WorkerStore, name))


def test_writes_join_the_committer_and_reads_do_not(tmp_path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    committer = GroupCommitter(store)
    view = CommittingStore(store, committer)
    try:
        store.submit([NewJob(type="t", payload_json="{}", project="p", queue="default",
                             priority=0, run_after=None, max_attempts=3, safe_to_retry=True,
                             idempotency_key=None, input_config_hash="h")])
        (claim,) = view.claim("w", queues=None, limit=1, lease_ttl=30, start=True)
        job_id, attempt = claim.job.id, claim.attempt
        assert committer.writes == 1
        view.append_event(job_id, "note", {"x": 1}, attempt=attempt)
        view.set_stage(job_id, attempt, "s")
        assert committer.writes == 3
        view.lease_state(job_id, attempt)
        view.journal(job_id)
        view.get_checkpoint(job_id, "s")
        assert committer.writes == 3
        assert [e.kind for e in store.events(job_id)][-1] == "note"
    finally:
        store.close()
