"""Group commit on a real SQLite file: a batch runs without savepoints first, and a write that
raises — an ordinary error or a control signal such as a budget refusal, which is a
BaseException — fails alone: the batch runs again with a savepoint per write."""

from __future__ import annotations

import threading
import time

import pytest

from tether.errors import BudgetExhausted, StoreError
from tether.store.sqlite.store import SQLiteStore
from tether.worker.committer import GroupCommitter, _alone


def _insert(store: SQLiteStore, name: str, fail: BaseException | None = None):
    def write() -> str:
        with store._write() as tx:
            tx.conn.execute("INSERT INTO queues (name, paused, updated_at) VALUES (?, 0, 0)",
                            (name,))
            if fail is not None:
                raise fail
        return name
    return write


def _names(store: SQLiteStore) -> set[str]:
    return {r[0] for r in store._conn().execute("SELECT name FROM queues")}


@pytest.mark.parametrize("failure", [BudgetExhausted("project limit"), StoreError("boom")])
def test_one_failing_write_fails_alone(tmp_path, failure):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    committer = GroupCommitter(store)
    try:
        batch = [(_insert(store, n, failure if n == "bad" else None), (), {})
                 for n in ("a", "bad", "b")]
        outcomes = committer._commit(batch)
        results = {value: exc for value, exc in outcomes}
        assert results["a"] is None and results["b"] is None
        (bad_exc,) = [exc for value, exc in outcomes if value is None]
        assert bad_exc is failure
        assert _names(store) == {"a", "b"}, "the failing write's row was rolled back"
    finally:
        committer.stop()
        store.close()


def test_a_clean_batch_commits_every_write(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    committer = GroupCommitter(store)
    try:
        batch = [(_insert(store, n), (), {}) for n in ("x", "y", "z")]
        assert [v for v, _ in committer._commit(batch)] == ["x", "y", "z"]
        assert _names(store) == {"x", "y", "z"}
    finally:
        committer.stop()
        store.close()


def test_a_lone_write_commits_on_its_callers_thread(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    committer = GroupCommitter(store)
    try:
        ran_on = []
        insert = _insert(store, "x")

        def write() -> str:
            ran_on.append(threading.current_thread())
            return insert()

        assert committer.run(write) == "x"
        assert ran_on == [threading.current_thread()]
        assert (committer.batches, committer.writes) == (1, 1)
    finally:
        store.close()


def test_writes_queued_during_a_commit_share_the_next_one(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    committer = GroupCommitter(store)
    try:
        go = threading.Event()
        first = _insert(store, "first")

        def slow() -> str:
            go.wait(5)
            return first()

        results: dict[str, object] = {}
        leader = threading.Thread(target=lambda: results.update(first=committer.run(slow)))
        leader.start()
        while not committer._leading:
            time.sleep(0.001)
        followers = [threading.Thread(
            target=lambda n=n: results.update({n: committer.run(_insert(store, n))}))
            for n in ("a", "b", "c")]
        for t in followers:
            t.start()
        deadline = time.monotonic() + 5
        while len(committer._pending) < 3 and time.monotonic() < deadline:
            time.sleep(0.001)  # three queued behind the write being committed
        go.set()
        for t in [leader, *followers]:
            t.join(5)
        assert results == {"first": "first", "a": "a", "b": "b", "c": "c"}
        assert (committer.batches, committer.writes) == (2, 4), "three writes, one commit"
        assert {"first", "a", "b", "c"} <= _names(store)
    finally:
        store.close()


def test_mergeable_writes_of_a_batch_are_written_by_one_call(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    committer = GroupCommitter(store)
    calls: list[list[str]] = []

    def many(items: list[str]) -> list[str]:
        calls.append(list(items))
        if "bad" in items:
            raise StoreError("the group failed")
        return [item.upper() for item in items]

    merged = [_merged_write(many, n) for n in ("p", "q")]
    try:
        batch = [merged[0], (_insert(store, "x"), (), {}), merged[1]]
        assert [v for v, _ in committer._commit(batch)] == ["P", "x", "Q"]
        assert calls == [["p", "q"]], "one call for the batch's two mergeable writes"
        assert _names(store) == {"x"}
        calls.clear()
        bad = [_merged_write(many, n) for n in ("r", "bad")]
        outcomes = committer._commit(bad)
        assert calls == [["r", "bad"], ["r"], ["bad"]], "after a failure: each alone"
        assert outcomes[0] == ("R", None) and isinstance(outcomes[1][1], StoreError)
    finally:
        committer.stop()
        store.close()


def _merged_write(many, item):
    """What ``GroupCommitter.run_merged`` queues."""
    return (_alone, (many, item), {})
