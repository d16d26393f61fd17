"""SQLite connections on a real file: one writer connection per process for every write,
read connections per thread, and the settings each carries (store/sqlite/store.py)."""

from __future__ import annotations

import threading

from tether.store.sqlite.store import SQLiteStore


def _pragma(conn, name: str):
    return conn.execute(f"PRAGMA {name}").fetchone()[0]


def _insert(store: SQLiteStore, name: str) -> object:
    with store._write() as tx:
        tx.conn.execute("INSERT INTO queues (name, paused, updated_at) VALUES (?, 0, 0)", (name,))
        return tx.conn


def test_every_thread_writes_through_the_one_writer_and_reads_on_its_own(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    try:
        used, readers = [], []

        def work(i: int) -> None:
            used.append(_insert(store, f"q{i}"))
            readers.append(store._conn())

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert {id(c) for c in used} == {id(store._writer)}
        assert len({id(c) for c in readers}) == 4 and store._writer not in readers
        names = {r[0] for r in store._conn().execute("SELECT name FROM queues")}
        assert {"q0", "q1", "q2", "q3"} <= names
    finally:
        store.close()


def test_a_read_inside_a_write_sees_that_write(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    try:
        with store._write() as tx:
            tx.conn.execute("INSERT INTO queues (name, paused, updated_at) VALUES ('x', 0, 0)")
            with store._read() as r:
                assert r.conn is tx.conn
                assert r.conn.execute("SELECT count(*) FROM queues WHERE name = 'x'"
                                      ).fetchone()[0] == 1
        outside = store._conn()
        assert outside is not store._writer
    finally:
        store.close()


def test_writers_in_one_process_queue_on_the_mutex_instead_of_failing(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db")
    try:
        inside, release = threading.Event(), threading.Event()
        errors: list[BaseException] = []

        def slow() -> None:
            with store._write() as tx:
                tx.conn.execute("INSERT INTO queues (name, paused, updated_at) VALUES ('a', 0, 0)")
                inside.set()
                release.wait(5)

        def second() -> None:
            try:
                _insert(store, "b")
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        t1 = threading.Thread(target=slow)
        t1.start()
        assert inside.wait(5)
        t2 = threading.Thread(target=second)
        t2.start()
        t2.join(0.2)
        assert t2.is_alive(), "the second writer waits while the first holds the transaction"
        release.set()
        t1.join(5)
        t2.join(5)
        assert errors == []
        names = {r[0] for r in store._conn().execute("SELECT name FROM queues")}
        assert {"a", "b"} <= names
    finally:
        store.close()


def test_connection_settings(tmp_path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/t.db", busy_timeout_ms=7_000)
    try:
        _insert(store, "x")
        writer, reader = store._writer, store._conn()
        for conn in (writer, reader):
            assert _pragma(conn, "journal_mode") == "wal"
            assert _pragma(conn, "synchronous") == 2  # FULL: a commit survives power loss
            assert _pragma(conn, "foreign_keys") == 1
        assert _pragma(writer, "busy_timeout") == 0  # waits in _begin's own loop
        assert _pragma(reader, "busy_timeout") == 7_000
        assert _pragma(writer, "cache_size") == -store.writer_cache_kib
        assert _pragma(reader, "cache_size") == -store.reader_cache_kib
    finally:
        store.close()
