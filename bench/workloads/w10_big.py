"""W10 big tables: tether beside ``big_finished`` finished jobs with their events and attempts
(built by ``w10_build``), against the same engine on an almost empty database.

* claim cost: median of ``store.claim(limit=claim_batch)``, small database vs big, interleaved;
* listing: the facade call ``tether job list`` makes (``Tether.list``) timed in-process, p50 /
  p99; a few real ``tether job list`` processes (start-up dominates, reported apart); and
  through a real ``tether serve`` (uvicorn) with httpx: the default list, ``?state=failed``,
  and the dashboard's job-list requests as ``jobs.js`` makes them (``?limit=50``, its next
  page by cursor, a state filter), and a ``/metrics`` scrape (each finished job has one
  ledger row, so the spend series sit beside as many);
* prune: ``Tether.prune`` (what ``tether prune`` calls) on the oldest ``big_prune_fraction``
  of the finished jobs: jobs/s, with another thread claiming (and one submitting, so there is
  work to claim) during it; claims p99 during the prune against the same threads before it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..apps import make_app
from ..backends import python_env, spawn, stop
from ..stats import median, percentile, ratio
from . import w10_build

KEY = "W10"
TITLE = "big tables (10 M finished jobs)"
ROUNDS = 10


def _ms(samples: list[float]) -> dict:
    return {"p50_ms": (percentile(samples, 50) or 0) * 1000,
            "p99_ms": (percentile(samples, 99) or 0) * 1000,
            "max_ms": max(samples) * 1000 if samples else None, "n": len(samples)}


def _timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _claims(small, big, sz) -> dict:
    """Interleaved turns, so a slow minute of the shared disk lands on both alike."""
    per_turn = max(1, sz.big_claim_samples // ROUNDS)
    times: dict[str, list[float]] = {"small": [], "big": []}
    got = {"small": 0, "big": 0}
    for _ in range(ROUNDS):
        for name, app in (("small", small), ("big", big)):
            for _ in range(per_turn):
                t = time.perf_counter()
                n = len(app.store.claim("bench-w10", queues=None, limit=sz.claim_batch,
                                        lease_ttl=600.0))
                times[name].append(time.perf_counter() - t)
                got[name] += n
    out = {name: {"median_ms": median(ts) * 1000, "claimed": got[name]}
           for name, ts in times.items()}
    out["ratio"] = ratio(out["big"]["median_ms"], out["small"]["median_ms"])
    want = ROUNDS * per_turn * sz.claim_batch
    for name in ("small", "big"):
        if got[name] < want:
            out["error"] = f"{name}: claimed {got[name]} of {want}"
    return out


LISTS = {
    "default": {},
    "state_failed": {"state": "failed"},
    "state_cancelled_none": {"state": "cancelled"},  # a state no job is in: the worst case
    "project_state_failed": {"project": "proj-1", "state": "failed"},
    "queue_type": {"queue": "queue-2", "type": "embed"},
    "search_id": {"search": None},  # filled in: an id from the middle of the table
    "search_key_none": {"search": "no-such-key"},
}


def _lists(app, sz, middle: int) -> dict:
    out = {}
    for name, filters in LISTS.items():
        if name == "search_id":
            filters = {"search": str(middle)}
        got = app.list(**filters)
        out[name] = dict(_ms(_timed(lambda f=filters: app.list(**f), sz.big_list_calls)),
                         rows=len(got))
    return out


def _tether_bin() -> list[str]:
    script = Path(sys.executable).with_name("tether")
    if script.exists():
        return [str(script)]
    found = shutil.which("tether")
    return [found] if found else [sys.executable, "-c", "from tether.cli.main import main; main()"]


def _cli(url: str, sz) -> dict:
    times, rows = [], None
    for _ in range(sz.big_cli_runs):
        t = time.perf_counter()
        proc = subprocess.run([*_tether_bin(), "job", "list", "--state", "failed", "--json",
                               "--database-url", url], capture_output=True, text=True,
                              timeout=120, env=python_env())
        times.append(time.perf_counter() - t)
        if proc.returncode != 0:
            return {"error": proc.stderr[-500:]}
        rows = proc.stdout.count('"id"')
    return {"wall_ms": [round(x * 1000, 1) for x in times],
            "median_ms": median(times) * 1000, "rows": rows}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(url: str, sz, backend: str, middle: int) -> dict:
    import httpx
    port = _free_port()
    proc = spawn([*_tether_bin(), "serve", "--port", str(port), "--insecure-no-auth",
                  "--no-worker", "--log-level", "warning", "--database-url", url],
                 name=f"w10-serve-{backend}")
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        with httpx.Client(base_url=base, timeout=30.0) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if client.get("/jobs", params={"limit": 1}).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    return {"error": "tether serve did not answer"}
                time.sleep(0.1)
            first = client.get("/jobs", params={"limit": 50}).json()
            requests = {
                "default": {},
                "state_failed": {"state": "failed"},
                "dashboard_first_page": {"limit": 50},
                "dashboard_next_page": {"limit": 50, "cursor": first["next_cursor"]},
                "dashboard_state_failed": {"limit": 50, "state": "failed"},
                "dashboard_search_id": {"limit": 50, "search": str(middle)},
                "dashboard_project_failed": {"limit": 50, "project": "proj-1",
                                             "state": "failed"},
            }
            out = {}
            for name, params in requests.items():
                samples, rows = [], 0
                for _ in range(sz.big_list_calls):
                    t = time.perf_counter()
                    r = client.get("/jobs", params=params)
                    samples.append(time.perf_counter() - t)
                    if r.status_code != 200:
                        return {"error": f"{name}: HTTP {r.status_code} {r.text[:300]}"}
                    rows = len(r.json()["items"])
                out[name] = dict(_ms(samples), rows=rows)
            samples = []
            for _ in range(sz.big_list_calls):  # what Prometheus asks every scrape
                t = time.perf_counter()
                r = client.get(f"http://127.0.0.1:{port}/metrics")
                samples.append(time.perf_counter() - t)
                if r.status_code != 200:
                    return {"error": f"metrics: HTTP {r.status_code} {r.text[:300]}"}
            out["metrics_scrape"] = dict(_ms(samples), rows=r.text.count("\n"))
            return out
    finally:
        stop([proc])


class _Load:
    """A submitting thread and a claiming thread on their own apps; claim times recorded."""

    def __init__(self, url: str, batch: int) -> None:
        self.submitter, self.claimer = make_app(url), make_app(url)
        self.batch = batch
        self.times: list[float] = []
        self.claimed = 0
        self.stop = threading.Event()
        self.errors: list[str] = []

    def _submit(self) -> None:
        while not self.stop.is_set():
            self.submitter.submit_many([{"type": "noop"}] * self.batch)
            self.stop.wait(0.01)

    def _claim(self) -> None:
        while not self.stop.is_set():
            t = time.perf_counter()
            got = self.claimer.store.claim("bench-w10-load", queues=None, limit=self.batch,
                                           lease_ttl=600.0)
            self.times.append(time.perf_counter() - t)
            self.claimed += len(got)
            self.stop.wait(0.005)

    def run_while(self, until) -> dict:
        self.times, self.claimed = [], 0
        self.stop.clear()
        threads = [threading.Thread(target=self._guard, args=(f,), daemon=True)
                   for f in (self._submit, self._claim)]
        for th in threads:
            th.start()
        started = time.perf_counter()
        try:
            result = until()
        finally:
            self.stop.set()
            for th in threads:
                th.join(60)
        return dict(_ms(self.times), claimed=self.claimed,
                    seconds=time.perf_counter() - started, result=result)

    def _guard(self, fn) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - reported in the figures
            self.errors.append(f"{type(exc).__name__}: {exc}")
            self.stop.set()

    def close(self) -> None:
        self.submitter.close()
        self.claimer.close()


def _prune(app, db, info: dict, sz) -> dict:
    load = _Load(db.url, sz.claim_batch)
    try:
        baseline = load.run_while(lambda: time.sleep(sz.big_prune_baseline_s))
        # finish times run from t0 to t0 + span: "older than" the fraction's boundary
        boundary = info["t0"] + sz.big_prune_fraction * info["span_s"]
        during = load.run_while(lambda: app.prune(older_than_s=time.time() - boundary))
    finally:
        load.close()
    pruned = during.pop("result")
    baseline.pop("result")
    out = {"pruned": pruned, "prune_s": during["seconds"],
           "jobs_per_s": pruned / during["seconds"] if during["seconds"] else None,
           "claims_baseline": baseline, "claims_during": during,
           "claims_p99_ratio": ratio(during["p99_ms"], baseline["p99_ms"])}
    if load.errors:
        out["error"] = "; ".join(load.errors)
    return out


def run(backend: str, sz, env) -> dict:
    out: dict = {"finished": sz.big_finished, "queued": sz.big_queued}
    built = []
    try:
        shape = dict(queued=sz.big_queued, failed_every=sz.big_failed_every,
                     span_s=sz.big_span_s, log=env.log)
        small_db, small, _ = w10_build.build(backend, finished=0, **shape)
        built.append((small_db, small))
        env.log(f"W10 {backend}: building {sz.big_finished:,} finished jobs")
        db, app, info = w10_build.build(backend, finished=sz.big_finished, **shape)
        built.append((db, app))
        out["build"] = {k: info[k] for k in ("load_s", "index_analyze_s", "build_s")}
        out["rows"] = {t: int(db.scalar(f"SELECT count(*) FROM {t}"))
                       for t in w10_build.TABLES}
        env.log(f"W10 {backend}: built in {info['build_s']:.0f}s: {out['rows']}")
        out["claim"] = _claims(small, app, sz)
        env.log(f"   -> claim ratio big/small {out['claim']['ratio']}")
        middle = info["first_id"] + sz.big_finished // 2
        out["list"] = _lists(app, sz, middle)
        env.log(f"   -> list {out['list']}")
        out["cli"] = _cli(db.url, sz)
        out["http"] = _http(db.url, sz, backend, middle)
        env.log(f"   -> http {out['http']}")
        out["prune"] = _prune(app, db, info, sz)
        env.log(f"   -> prune {out['prune']}")
        for part in ("claim", "cli", "http", "prune"):
            if "error" in out[part]:
                out["error"] = f"{part}: {out[part]['error']}"
    finally:
        for d, a in built:
            a.close()
            d.drop()
    return out
