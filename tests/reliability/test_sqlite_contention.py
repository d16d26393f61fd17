"""SQLite under contention: eight worker processes, the REST API server and CLI commands on one
file, under a burst of submits, cancels and heartbeats (DESIGN §8, §9 "database is locked").

No "database is locked" (or any 5xx) reaches a user, no acknowledged transition is lost (every
acknowledged submit exists, every acknowledged cancel ends cancelled, every job's history is a
valid gap-free path), and ``PRAGMA integrity_check`` is ok afterwards.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tether import JobState
from tether.testing.invariants import describe, run_checks
from tests.e2e.api_harness import run_server
from tests.procs import stop, wait_until
from tests.reliability.helpers import APP, cli, client, read_log, worker

pytestmark = pytest.mark.slow
S = JobState
LOCKED = ("database is locked", "database table is locked", "SQLITE_BUSY")


def test_eight_workers_api_and_cli_on_one_sqlite_file(tmp_path):
    db = tmp_path / "t.db"
    url = f"sqlite:///{db}"
    app = client(url)
    app.submit("quick", {"warm": True})  # migrate before the crowd arrives
    payload = {"steps": 6, "step_s": 0.01, "stage_every": 1}
    workers = [worker(url, tmp_path, f"w{i}", concurrency=2, lease_ttl=1.5, poll=0.02)
               for i in range(8)]
    rng = random.Random(3)
    submitted: list[int] = []
    cancelled: list[int] = []        # cancels that were acknowledged
    problems: list[str] = []
    lock = threading.Lock()
    try:
        with run_server(url, tmp_path, app_spec=APP, insecure=True) as server:
            http = httpx.Client(base_url=server.url, timeout=60)

            def api_submit(i: int) -> None:
                r = http.post("/api/v1/jobs", json={"type": "steps", "payload": dict(payload, i=i)},
                              headers={"Idempotency-Key": f"burst-{i}"})
                if r.status_code != 201:
                    problems.append(f"API submit {i}: {r.status_code} {r.text[:300]}")
                    return
                job_id = r.json()["id"]
                with lock:
                    submitted.append(job_id)
                if rng.random() < 0.35:
                    c = http.post(f"/api/v1/jobs/{job_id}/cancel")
                    if c.status_code == 200:
                        with lock:
                            cancelled.append(job_id)
                    elif c.status_code != 409:  # 409: it had already finished
                        problems.append(f"API cancel {job_id}: {c.status_code} {c.text[:300]}")

            def direct_burst(k: int) -> None:
                jobs = app.submit_many([{"type": "steps", "payload": dict(payload, k=k, j=j)}
                                        for j in range(20)])
                with lock:
                    submitted.extend(j.id for j in jobs)
                for j in jobs[::4]:
                    try:
                        app.cancel(j.id)
                        with lock:
                            cancelled.append(j.id)
                    except Exception as exc:  # noqa: BLE001 - judged below
                        if "cannot cancel" not in str(exc):
                            problems.append(f"direct cancel {j.id}: {exc!r}")

            def cli_round(k: int) -> None:
                done = cli("submit", "steps", "--app", APP, "--json",
                           "--payload", '{"steps": 4, "step_s": 0.01, "cli": %d}' % k, db=url)
                if done.returncode != 0:
                    problems.append(f"CLI submit: {done.stderr[-500:]}")
                    return
                import json
                job_id = json.loads(done.stdout)["id"]
                with lock:
                    submitted.append(job_id)
                gone = cli("job", "cancel", str(job_id), db=url)
                if gone.returncode == 0:
                    with lock:
                        cancelled.append(job_id)
                elif "cannot cancel" not in gone.stderr:
                    problems.append(f"CLI cancel: {gone.stderr[-500:]}")
                listing = cli("job", "list", "--project", "default", db=url)
                if listing.returncode != 0:
                    problems.append(f"CLI list: {listing.stderr[-500:]}")
                for out in (done, gone, listing):
                    if any(m in out.stdout + out.stderr for m in LOCKED):
                        problems.append(f"CLI saw a lock: {out.stderr[-500:]}")

            with ThreadPoolExecutor(max_workers=10) as pool:
                futures = [pool.submit(api_submit, i) for i in range(160)]
                futures += [pool.submit(direct_burst, k) for k in range(6)]
                futures += [pool.submit(cli_round, k) for k in range(4)]
                for f in futures:
                    f.result()
            wait_until(lambda: all(j.terminal for j in app.list(limit=1000)), timeout=180,
                       interval=0.5, what="every job to end")
            listing = http.get("/api/v1/jobs", params={"limit": 500})
            assert listing.status_code == 200
            http.close()
            server_log = read_log(server.log)
    finally:
        codes = [stop(w) for w in workers]
    assert not problems, "\n".join(problems[:20])
    hung = {f"w{i}": (c, read_log(tmp_path / f"w{i}.log")[-4000:]) for i, c in enumerate(codes) if c}
    assert not hung, hung
    for name in [f"w{i}.log" for i in range(8)]:
        text = read_log(tmp_path / name)
        assert not any(m in text for m in LOCKED), f"{name}: {text[-2000:]}"
        assert "Traceback" not in text, f"{name}: {text[-3000:]}"
    assert not any(m in server_log for m in LOCKED) and " 500 " not in server_log
    assert len(submitted) == 160 + 6 * 20 + 4 and len(set(submitted)) == len(submitted)
    states = {j.id: j.state for j in app.list(limit=1000)}
    assert all(i in states for i in submitted), "an acknowledged submit was lost"
    assert all(states[i] == S.CANCELLED for i in cancelled), "an acknowledged cancel was lost"
    assert sum(1 for i in submitted if states[i] == S.SUCCEEDED) > 0
    checks = run_checks(app, expected_ids=submitted + [min(states)])
    assert all(c.ok for c in checks), describe(checks)
    app.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
