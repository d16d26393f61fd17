"""W6 recovery: two worker processes; a job starts on one, that process is SIGKILLed, and the
time until the job starts again (attempt 2, on the other worker) is measured. The lease TTL
dominates: a lease is renewed every TTL/3, so at the kill it has between 2/3 TTL and TTL left;
then the rescuer (every max(0.2 s, poll interval)) re-queues it and a worker claims it."""

from __future__ import annotations

import os
import signal
import time

from ..apps import make_app

from ..backends import SCRATCH, TetherDB, stop, tether_worker, wait_for
from ..measure import StampFile
from ..stats import median, summarize

KEY = "W6"
TITLE = "recovery after SIGKILL (s)"


def tether_once(backend: str, sz) -> dict:
    db = TetherDB(backend, "w6")
    app = make_app(db.url)
    app.store
    stamps = StampFile(SCRATCH / f"w6-{db.label}.stamps")
    procs = [tether_worker(db.url, concurrency=sz.concurrency, lease_ttl=sz.lease_ttl,
                           poll_interval=sz.poll_interval, name=f"w6-{backend}-{i}")
             for i in range(2)]
    samples: list[float] = []
    errors: list[str] = []
    try:
        wait_for(lambda: db.scalar("SELECT count(*) FROM workers") >= 2, timeout=30)
        for s in range(sz.recovery_samples):
            marker = f"r{s}"
            job = app.submit("hold", {"path": str(stamps.path), "marker": marker,
                                      "seconds": 600})
            first = stamps.wait(f"{marker}.1", timeout=30)
            if first is None:
                errors.append(f"sample {s}: never started")
                continue
            victim = next((p for p in procs if p.pid == first[1]), None)
            if victim is None:
                errors.append(f"sample {s}: started in unknown pid {first[1]}")
                continue
            time.sleep(min(0.5, sz.lease_ttl / 4))  # let it settle into its lease
            os.kill(victim.pid, signal.SIGKILL)
            killed_at = time.time()
            victim.wait(10)
            second = stamps.wait(f"{marker}.2", timeout=sz.lease_ttl * 3 + 30)
            if second is None:
                errors.append(f"sample {s}: not restarted within {sz.lease_ttl * 3 + 30:.0f}s")
            else:
                samples.append(second[0] - killed_at)
            procs[procs.index(victim)] = tether_worker(
                db.url, concurrency=sz.concurrency, lease_ttl=sz.lease_ttl,
                poll_interval=sz.poll_interval, name=f"w6-{backend}-r{s}")
            app.cancel(job.id)
            wait_for(lambda: app.get(job.id).state.value == "cancelled", timeout=15)
            wait_for(lambda: db.scalar("SELECT count(*) FROM workers WHERE stopped_at IS NULL")
                     >= 3 + s, timeout=30)
        res = {"recovery_s": median(samples), "lease_ttl_s": sz.lease_ttl,
               "over_ttl_s": None if not samples else median(samples) - sz.lease_ttl,
               "samples": samples}
        if errors:
            res["errors"] = errors
        return res
    finally:
        stop(procs)
        app.close()
        db.drop()
        stamps.path.unlink(missing_ok=True)


def run(backend: str, sz, env) -> dict:
    env.log(f"W6 {backend} tether: {sz.recovery_samples} SIGKILLs, lease TTL {sz.lease_ttl}s")
    res = tether_once(backend, sz)
    env.log(f"   -> recovery {res['recovery_s']} s (TTL {sz.lease_ttl}s) {res.get('errors', '')}")
    return {"tether": summarize([res]) | {"errors": res.get("errors", [])}}
