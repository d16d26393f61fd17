"""bench/commits.py counts a SQLite database's commits from its WAL, across checkpoints."""

from __future__ import annotations

import sqlite3

from bench.commits import WalCommits


def test_wal_counter_counts_every_commit_across_wal_restarts(tmp_path):
    db = tmp_path / "c.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=20")  # restart the WAL often
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
    counter = WalCommits(db)
    counter.start()  # the CREATE TABLE commit is already there: not counted
    for i in range(300):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (v) VALUES (randomblob(3000))")  # a frame or two each
        conn.execute("COMMIT")
        conn.execute("SELECT count(*) FROM t").fetchone()  # a read: no commit frame
        if i % 5 == 0:
            counter.poll()
    assert counter.stop() == 300
    assert counter.restarts > 0
    conn.close()
