"""Fault cases, each with real processes and real signals (DESIGN §1, §9).

* a zombie worker (SIGSTOP past its lease, then SIGCONT) writes nothing and starts no call;
* a poison job that kills its worker every time stops after ``max_attempts`` (failed,
  ``interrupted``) while the other jobs finish;
* a full disk (a tiny tmpfs, or a file-size limit) is a clear error, loses nothing that was
  acknowledged, and the worker recovers when space returns;
* hostile payloads are refused at submit and leave the store unchanged;
* a corrupt SQLite file is one clear error at start, not a traceback or a loop.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tether import InvalidPayload, JobState
from tether.errors import StorageFull, StoreError
from tether.testing.invariants import describe, run_checks
from tests.procs import stop, wait_until
from tests.reliability.helpers import Supervisor, cli, client, read_log, url_for, worker

pytestmark = pytest.mark.slow
S = JobState


@pytest.fixture
def url(backend, tmp_path):
    return url_for(backend, tmp_path)


def _calls(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- zombie -------------------------------------------------------------------------------------

def _write_lock_free(url: str, job_id: int) -> bool:
    """Could another process write the job now? A process frozen *inside* a write transaction
    holds SQLite's single write lock (or PostgreSQL's row lock) until it runs again: nobody
    can take over from it while it is frozen, which is SQLite's nature, not a lease bug."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url[len("sqlite:///"):], timeout=1.0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            conn.close()
    import psycopg
    from tether.store.postgres.store import conninfo_from_url
    with psycopg.connect(conninfo_from_url(url)) as conn:
        try:
            conn.execute("SET lock_timeout = '1s'")
            conn.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (job_id,))
            return True
        except psycopg.errors.LockNotAvailable:
            return False
        finally:
            conn.rollback()


def freeze_between_writes(proc, url: str, job_id: int, calls_log: Path) -> None:
    """SIGSTOP ``proc`` while it waits on a provider call, not while it holds a write lock."""
    for _ in range(20):
        seen = len(_calls(calls_log))
        wait_until(lambda: len(_calls(calls_log)) > seen, timeout=30, interval=0.005,
                   what="the next provider call to start")
        os.kill(proc.pid, signal.SIGSTOP)
        if _write_lock_free(url, job_id):
            return
        os.kill(proc.pid, signal.SIGCONT)
    raise AssertionError("could not freeze the worker outside a write transaction")


def test_zombie_worker_past_its_lease_writes_nothing_and_starts_no_call(backend, url, tmp_path):
    """SIGSTOP a worker in the middle of a job of provider calls, let another worker take the
    job over and finish it, SIGCONT the zombie: the job's history, journal, ledger and
    checkpoints do not change, and the zombie starts no provider call after it wakes."""
    calls_log, bill = tmp_path / "calls.jsonl", tmp_path / "bill.jsonl"
    env = {"RELY_CALLS": str(calls_log), "RELY_BILL": str(bill), "RELY_LATENCY": "0.1"}
    app = client(url)
    job = app.submit("calls", {"n": 40})
    zombie = worker(url, tmp_path, "zombie", concurrency=1, lease_ttl=1.5, env=env)
    healthy = None
    try:
        wait_until(lambda: len(_calls(calls_log)) >= 5, timeout=60, what="zombie to make calls")
        freeze_between_writes(zombie, url, job.id, calls_log)
        stopped_at = time.time()
        healthy = worker(url, tmp_path, "healthy", concurrency=1, lease_ttl=1.5, env=env)
        wait_until(lambda: app.get(job.id).state == S.SUCCEEDED, timeout=90,
                   what="the takeover to finish the job")
        before = (app.events(job.id), app.attempts(job.id), app.journal(job.id),
                  app.ledger(job.id), app.checkpoints(job.id), app.get(job.id))
        woke_at = time.time()
        os.kill(zombie.pid, signal.SIGCONT)
        # The zombie's heartbeat runs again (its worker row is touched): that beat is where it
        # learns the lease is gone. Then give its job thread a moment to try what it would.
        wait_until(lambda: any(w.pid == zombie.pid and w.last_heartbeat_at.timestamp() > woke_at
                               for w in app.workers()), timeout=30,
                   what="the zombie to heartbeat again")
        time.sleep(1.0)
        assert zombie.poll() is None, "the zombie should stand down, not crash"
        after = (app.events(job.id), app.attempts(job.id), app.journal(job.id),
                 app.ledger(job.id), app.checkpoints(job.id), app.get(job.id))
    finally:
        os.kill(zombie.pid, signal.SIGCONT)
        stop(zombie)
        if healthy is not None:
            stop(healthy)
    assert after == before, "the zombie changed the job after the takeover"
    final = after[-1]
    assert final.state == S.SUCCEEDED and final.result == {"calls": 40}
    attempts = after[1]
    assert [a.outcome for a in attempts] == ["lease_expired", "succeeded"]
    late = [c for c in _calls(calls_log) if c["pid"] == zombie.pid and c["ts"] >= woke_at]
    assert late == [], f"the zombie started provider calls after it woke: {late}"
    assert all(c["ts"] <= stopped_at for c in _calls(calls_log) if c["pid"] == zombie.pid)
    checks = run_checks(app, expected_ids=[job.id], bill_path=bill)
    assert all(c.ok for c in checks), describe(checks)


# --- poison -------------------------------------------------------------------------------------

def test_poison_job_fails_interrupted_after_max_attempts_while_others_finish(backend, url,
                                                                             tmp_path):
    marks = tmp_path / "poison.marks"
    app = client(url)
    poison = app.submit("poison", {"marks": str(marks)})
    others = app.submit_many([{"type": "quick", "payload": {"n": i, "sleep": 0.02},
                               "max_attempts": 5} for i in range(30)])
    sup = Supervisor(url, tmp_path, 2, concurrency=2, lease_ttl=1.5)
    try:
        sup.wait(lambda: app.get(poison.id).terminal
                 and all(app.get(j.id).terminal for j in others),
                 timeout=120, what="the poison job to stop and the others to finish")
    finally:
        sup.stop()
    p = app.get(poison.id)
    assert p.state == S.FAILED and p.error_code == "interrupted", p
    assert p.attempt_count == 3 == p.max_attempts
    assert len(marks.read_text().split()) == 3, "its code ran once per counted attempt"
    assert [a.outcome for a in app.attempts(poison.id)] == ["lease_expired"] * 3
    assert sup.restarts >= 3 and all(code == -signal.SIGKILL for code in sup.exit_codes)
    assert Counter(app.get(j.id).state for j in others) == {S.SUCCEEDED: len(others)}
    checks = run_checks(app, expected_ids=[poison.id] + [j.id for j in others])
    assert all(c.ok for c in checks), describe(checks)


# --- full disk ----------------------------------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path):
    """A 16 MiB tmpfs (root only): the real ENOSPC, for every process that writes there. Not
    smaller: SQLite checkpoints its WAL at 1,000 pages (4 MiB), so on a disk that cannot hold
    that WAL beside the database, no commit and no checkpoint ever fits again."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(directory: Path) -> Path:
    """Fill the filesystem until it refuses another byte."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as fh:
        for size in (256 * 1024, 16 * 1024, 1024, 64, 1):
            while True:
                try:
                    fh.write(b"\0" * size)
                except OSError:
                    break
    return filler


def test_full_disk_is_a_clear_error_loses_nothing_and_recovers(tiny_disk, tmp_path):
    """The disk fills while a worker runs jobs that write (stages, outcomes) and a client
    submits. Submits are refused with StorageFull (the CLI: one line), nothing acknowledged is
    lost, and once space returns -- sooner than a lease TTL, so no lease expires and nothing
    is rescued -- every job finishes: none failed of the full disk, none left leased."""
    url = f"sqlite:///{tiny_disk}/t.db"
    log = tmp_path / "w.log"
    app = client(url)
    acked = [j.id for j in app.submit_many(
        [{"type": "steps", "payload": {"steps": 40, "step_s": 0.02, "stage_every": 1}}
         for _ in range(16)])]
    w = worker(url, tmp_path, "w", concurrency=4, lease_ttl=8, poll=0.05)
    try:
        wait_until(lambda: app.store.list_jobs(state="succeeded", limit=1), timeout=60,
                   what="the worker to finish a job")
        filler = fill(tiny_disk)
        # Writes now fail: each refusal is a StorageFull that says so, never a half write.
        refused = None
        for i in range(200):
            try:
                acked.append(app.submit("steps", {"steps": 2, "pad": "x" * 20_000}).id)
            except StorageFull as exc:
                refused = exc
                break
        assert refused is not None, "200 submits fit on a full disk?"
        assert "full" in str(refused).lower() and refused.code == "storage_full"
        wait_until(lambda: "disk is full" in read_log(log), timeout=30,
                   what="the worker to run into the full disk")
        filler.unlink()
        wait_until(lambda: all(app.get(i).terminal for i in acked), timeout=120,
                   what="every acknowledged job to finish once space returned")
    finally:
        stop(w)
    states = Counter(app.get(i).state for i in acked)
    assert states == {S.SUCCEEDED: len(acked)}, (states, read_log(log)[-4000:])
    checks = run_checks(app, expected_ids=acked)
    assert all(c.ok for c in checks), describe(checks)
    app.close()
    with sqlite3.connect(tiny_disk / "t.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("inside", [False, True], ids=["alone", "in-a-transaction"])
def test_a_disk_filled_by_others_is_survived_by_checkpointing_the_wal(tiny_disk, inside):
    """Another program fills the disk while the WAL holds frames not yet checkpointed (SQLite
    checkpoints only after a commit, at 1,000 pages). The write that fails with StorageFull
    checkpoints the WAL into the database's existing pages and truncates it, so the next
    write fits in the space the WAL gave back -- with the disk still full. The same when the
    write fails in a savepoint of the caller's ``transaction()``."""
    url = f"sqlite:///{tiny_disk}/t.db"
    app = client(url)
    job = app.submit("quick", {"n": 1, "pad": "p" * 2000})
    raw = sqlite3.connect(tiny_disk / "t.db", isolation_level=None)
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for i in range(300):  # frames of pages the database file already has
        raw.execute("UPDATE jobs SET priority = ? WHERE id = ?", (i % 7, job.id))
    wal = tiny_disk / "t.db-wal"
    assert wal.stat().st_size > 300 * 4096
    filler = fill(tiny_disk)
    with pytest.raises(StorageFull):
        with app.store.transaction() if inside else contextlib.nullcontext():
            for n in range(2, 40 if inside else 3):  # past the page cache: a spill mid-statement
                app.submit("quick", {"n": n, "pad": "q" * 200_000})
    assert wal.stat().st_size == 0
    second = app.submit("quick", {"n": 3})
    assert app.get(second.id).state == S.QUEUED and filler.exists()
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    app.close()


def test_a_write_after_sqlite_rolled_the_transaction_back_does_not_run_alone(tiny_disk):
    """A full disk mid-statement makes SQLite roll back the whole transaction, not just the
    failing write's savepoint. A caller that catches that write's StorageFull and goes on
    inside ``transaction()`` (as the worker's group commit does, handing each write its own
    outcome) must not have its later writes run outside any transaction: they fail the same
    way, the block fails at its end, and none of them is stored."""
    url = f"sqlite:///{tiny_disk}/t.db"
    app = client(url)
    first = app.submit("quick", {"n": 1})
    filler = fill(tiny_disk)
    failures = []
    with pytest.raises(StorageFull, match="rolled this transaction back"):
        with app.store.transaction():
            for n in range(2, 40):
                try:
                    app.submit("quick", {"n": n, "pad": "q" * 200_000})
                except StorageFull as exc:
                    failures.append(str(exc))
                    if len(failures) == 2:
                        break
    assert "disk is full" in failures[0], failures
    assert "rolled this transaction back" in failures[1], failures
    filler.unlink()
    assert [j.id for j in app.list(limit=50)] == [first.id]
    app.close()


def test_full_disk_cli_submit_is_one_clear_line(tiny_disk):
    url = f"sqlite:///{tiny_disk}/t.db"
    app = client(url)
    job = app.submit("quick", {"n": 1})
    app.close()
    filler = fill(tiny_disk)
    done = cli("submit", "quick", "--app", "tests.reliability.apps:app",
               "--payload", '{"pad": "' + "y" * 50_000 + '"}', db=url)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "full" in done.stderr.lower(), done.stderr[-3000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    # Even reading needs room on a full disk once every connection closed (SQLite creates its
    # -wal and -shm files on open): that too is one clear line.
    listing = cli("job", "list", "--project", "default", db=url)
    assert listing.returncode != 0 or str(job.id) in listing.stdout
    assert "Traceback" not in listing.stderr, listing.stderr[-3000:]
    filler.unlink()
    assert [j.id for j in client(url).list(limit=5)] == [job.id]


def _limit_file_size(pid: int, limit: int) -> None:
    soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, hard))


def test_file_size_limit_on_a_worker_is_survived(tmp_path):
    """No root needed: RLIMIT_FSIZE on the worker process (EFBIG instead of ENOSPC). The
    worker cannot grow the database or its WAL, keeps running, and catches up when the limit
    is lifted; the client process, which has no limit, keeps submitting meanwhile."""
    url = f"sqlite:///{tmp_path}/t.db"
    app = client(url)
    acked = [j.id for j in app.submit_many(
        [{"type": "steps", "payload": {"steps": 10, "step_s": 0.02, "stage_every": 2,
                                        "pad": "p" * 4000}} for _ in range(10)])]
    w = worker(url, tmp_path, "w", concurrency=2, lease_ttl=3, poll=0.05,
               env={"PYTHONFAULTHANDLER": "1"})
    try:
        wait_until(lambda: app.store.list_jobs(state="succeeded", limit=1), timeout=60,
                   what="the worker to finish a job")
        # SIGXFSZ would kill it: a process that sets file limits ignores it (as daemons do).
        # The worker cannot ignore a signal from outside, so the limit stays above the current
        # sizes and the client makes the files grow past it.
        db = tmp_path / "t.db"
        wal = tmp_path / "t.db-wal"
        _limit_file_size(w.pid, max(db.stat().st_size, wal.stat().st_size if wal.exists()
                                    else 0) + 1)
        for _ in range(40):  # the client (no limit) grows the files past the worker's limit
            acked.append(app.submit("steps", {"steps": 3, "pad": "q" * 30_000}).id)
            time.sleep(0.05)
        wait_until(lambda: "disk I/O error" in read_log(tmp_path / "w.log")
                   or "too large" in read_log(tmp_path / "w.log"), timeout=30,
                   what="the worker to run into its file size limit")
        _limit_file_size(w.pid, resource.RLIM_INFINITY)
        wait_until(lambda: w.poll() is not None or all(app.get(i).terminal for i in acked),
                   timeout=120, what="every job to finish after the limit was lifted")
    finally:
        code = stop(w)
    log = read_log(tmp_path / "w.log")
    if code == -signal.SIGXFSZ:
        pytest.skip("the worker was killed by SIGXFSZ (the limit is enforced by a signal here)")
    assert all(app.get(i).state == S.SUCCEEDED for i in acked), log[-3000:]
    checks = run_checks(app, expected_ids=acked)
    assert all(c.ok for c in checks), describe(checks)


# --- hostile payloads ---------------------------------------------------------------------------

def _deep(n: int) -> list:
    root: list = []
    cur = root
    for _ in range(n):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    return root


def _circular() -> dict:
    d: dict = {}
    d["self"] = d
    return d


BAD_PAYLOADS = {
    "oversized": lambda: {"text": "x" * (8 * 1024 * 1024)},
    "nan": lambda: {"score": float("nan")},
    "infinity": lambda: [1.0, float("-inf")],
    "bytes": lambda: {"blob": b"\x00\xff"},
    "set": lambda: {"tags": {"a", "b"}},
    "object": lambda: {"thing": object()},
    "non-string key": lambda: {1: "one"},
    "lone surrogate": lambda: {"text": "ok \ud800 broken"},
    "surrogate key": lambda: {"\udfff": 1},
    "nested 100000 deep": lambda: _deep(100_000),
    "circular": _circular,
}


@pytest.mark.parametrize("kind", sorted(BAD_PAYLOADS))
def test_hostile_payload_is_refused_at_submit_and_changes_nothing(backend, url, kind):
    app = client(url)
    before = app.submit("quick", {"n": 0})
    with pytest.raises(InvalidPayload) as info:
        app.submit("quick", BAD_PAYLOADS[kind]())
    assert info.value.code == "invalid_payload" and str(info.value)
    with pytest.raises(InvalidPayload):
        app.submit_many([{"type": "quick", "payload": {"n": 1}},
                         {"type": "quick", "payload": BAD_PAYLOADS[kind]()}])
    assert [j.id for j in app.list(limit=10)] == [before.id], "nothing was stored"
    assert len(app.events(before.id)) == 1


def test_corrupt_payload_through_the_cli_is_one_clear_error(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    cases = {"truncated": '{"a": [1, 2', "not json": "{'a': 1}", "nan": '{"a": NaN}',
             "lone surrogate": '{"a": "\\ud800"}', "deep": "[" * 50_000 + "]" * 50_000}
    for name, text in cases.items():
        f = tmp_path / f"{name}.json"
        f.write_text(text)
        done = cli("submit", "quick", "--app", "tests.reliability.apps:app",
                   "--payload-file", str(f), db=url)
        assert done.returncode != 0, name
        assert "Traceback" not in done.stderr, (name, done.stderr[-2000:])
        assert len(done.stderr.strip().splitlines()) == 1, (name, done.stderr[-2000:])
    assert client(url).list(limit=5) == []


# --- corrupt SQLite file ------------------------------------------------------------------------

def _make_db(path: Path) -> None:
    app = client(f"sqlite:///{path}")
    app.submit_many([{"type": "quick", "payload": {"n": i, "pad": "z" * 500}}
                     for i in range(200)])
    app.close()
    with sqlite3.connect(path) as conn:  # fold the WAL into the main file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _corrupt_header(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.write(b"this is not an sqlite file at all")


def _corrupt_pages(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        for offset in range(4096 * 2, size, 4096 * 3):
            fh.seek(offset)
            fh.write(b"\xde\xad\xbe\xef" * 256)


@pytest.mark.parametrize("damage", [_corrupt_header, _corrupt_pages],
                         ids=["header", "pages"])
def test_corrupt_sqlite_file_is_one_clear_error_at_start(tmp_path, damage):
    db = tmp_path / "t.db"
    _make_db(db)
    damage(db)
    url = f"sqlite:///{db}"
    started = time.monotonic()
    done = cli("worker", "--app", "tests.reliability.apps:app", db=url, timeout=60)
    assert time.monotonic() - started < 45, "the worker kept trying a corrupt file"
    assert done.returncode != 0
    err = done.stderr.strip()
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if "corrupt" in ln.lower() or "malformed" in ln]
    assert len(lines) == 1, err[-3000:]
    for command in (["job", "list", "--project", "default"], ["job", "status", "1"]):
        other = cli(*command, db=url)
        assert other.returncode != 0 and "Traceback" not in other.stderr, other.stderr[-3000:]
    with pytest.raises(StoreError):
        a = client(url)
        a.list(limit=5)
        a.store.check_integrity()
