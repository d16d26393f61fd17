"""``python -m bench.run``: every workload on SQLite and PostgreSQL, the peers and the
databases' ceilings in the same run; prints a table, writes JSON to bench/results/.

    python -m bench.run                       # full run, medians of 3 (about an hour)
    python -m bench.run --quick               # tiny sizes, 1 run, no peers (seconds)
    python -m bench.run --only W1,W3 --backend postgres --runs 5 --json out.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
import traceback

from . import ceiling
from .backends import BACKENDS, pg_problem
from .config import PG_ADMIN_URL, RESULTS, ROOT, sizes
from .env import Env
from .peers import ALL as ALL_PEERS
from .report import print_table
from .targets import targets
from .workloads import WORKLOADS


def _git() -> dict:
    def run(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=10).stdout.rstrip()
        except Exception:  # noqa: BLE001
            return ""
    return {"commit": run("rev-parse", "HEAD"),
            "dirty_engine_files": [ln[3:] for ln in run("status", "--porcelain", "src").splitlines()]}


def _tether_path() -> str:
    import tether
    return str(tether.__file__)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny sizes, 1 run, no peers")
    p.add_argument("--runs", type=int, default=None, help="runs per figure (median); default 3")
    p.add_argument("--backend", default="sqlite,postgres", help="sqlite,postgres")
    p.add_argument("--only", default=None, help="workloads, e.g. W1,W3 (default: all)")
    p.add_argument("--peers", default=None,
                   help="peers to run: huey,procrastinate,pgqueuer (default: all in full mode, "
                        "none with --quick); 'none' for none")
    p.add_argument("--no-ceiling", action="store_true", help="skip pgbench / SQLite ceilings")
    p.add_argument("--json", default=None, help="also write the JSON here")
    p.add_argument("--jobs", type=int, default=None, help="override W1 job count")
    p.add_argument("--concurrency", type=int, default=None, help="per worker process")
    p.add_argument("--poll-interval", type=float, default=None, help="tether worker poll (s)")
    p.add_argument("--drain-timeout", type=float, default=None, help="cap per W1 drain (s)")
    p.add_argument("--rss-jobs", type=int, default=None, help="W7 high-water job count")
    p.add_argument("--claim-big", type=int, default=None, help="W5 big table rows")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override any size in bench/config.py, e.g. --set calls=2000")
    p.add_argument("-q", "--quiet", action="store_true")
    return p.parse_args(argv)


def _overrides(items: list[str]) -> dict:
    from dataclasses import fields

    from .config import Sizes
    types = {f.name: f.type for f in fields(Sizes)}
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if key not in types:
            raise SystemExit(f"--set: unknown size {key!r}; one of {', '.join(types)}")
        kind = types[key] if isinstance(types[key], str) else types[key].__name__
        if kind.startswith("tuple"):
            item_type = int if "int" in kind else float
            out[key] = tuple(item_type(v) for v in value.split(",") if v.strip())
        else:
            out[key] = float(value) if kind == "float" else int(value) if kind == "int" else value
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    named = dict(runs=args.runs, throughput_jobs=args.jobs, concurrency=args.concurrency,
                 poll_interval=args.poll_interval, drain_timeout_s=args.drain_timeout,
                 rss_high=args.rss_jobs, claim_big=args.claim_big,
                 claim_finished=args.claim_big)
    named.update(_overrides(args.set))
    sz = sizes(args.quick, **named)
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            raise SystemExit(f"unknown backend {b!r}; use {', '.join(BACKENDS)}")
    only = [w.strip().upper() for w in args.only.split(",")] if args.only else list(WORKLOADS)
    for w in only:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r}; use {', '.join(WORKLOADS)}")
    if args.peers is None:
        peers = () if args.quick else tuple(ALL_PEERS)
    elif args.peers.strip().lower() == "none":
        peers = ()
    else:
        peers = tuple(p.strip() for p in args.peers.split(",") if p.strip())
    env = Env(runs=sz.runs, peers=peers, verbose=not args.quiet)
    started = time.time()
    res: dict = {
        "meta": {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                 "mode": "quick" if args.quick else "full", "runs": sz.runs,
                 "backends": backends, "workloads": only, "peers": list(peers),
                 "sizes": sz.to_dict(), "python": platform.python_version(),
                 "cpus": os.cpu_count(), "machine": platform.machine(), "git": _git(),
                 "pg_admin_url": PG_ADMIN_URL, "root": str(ROOT),
                 "tether_module": _tether_path()},
        "ceilings": {}, "workloads": {w: {} for w in WORKLOADS}, "errors": [],
    }
    if "postgres" in backends:
        problem = pg_problem()
        if problem:
            res["errors"].append(f"PostgreSQL unavailable: {problem}")
            env.log(f"PostgreSQL unavailable ({problem}); running SQLite only")
            backends = [b for b in backends if b != "postgres"]
    for b in backends:
        if not args.no_ceiling:
            env.log(f"ceiling {b}")
            try:
                res["ceilings"][b] = ceiling.measure(b, sz)
            except Exception as exc:  # noqa: BLE001
                res["ceilings"][b] = {"error": f"{type(exc).__name__}: {exc}"}
            env.log(f"   -> {res['ceilings'][b]}")
    for w in only:
        mod = WORKLOADS[w]
        for b in backends:
            try:
                res["workloads"][w][b] = mod.run(b, sz, env)
            except Exception as exc:  # noqa: BLE001 - one broken workload must not sink the run
                tb = traceback.format_exc()
                env.log(f"{w} {b} failed: {exc}\n{tb}")
                res["workloads"][w][b] = {"error": f"{type(exc).__name__}: {exc}"}
                res["errors"].append(f"{w} {b}: {type(exc).__name__}: {exc}")
    res["meta"]["elapsed_s"] = time.time() - started
    res["targets"] = targets(res)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"bench-{res['meta']['mode']}-{stamp}.json"
    text = json.dumps(res, indent=2, default=str)
    path.write_text(text)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text)
    if not args.quiet:
        print_table(res)
    print(f"results: {path}" + (f" and {args.json}" if args.json else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
