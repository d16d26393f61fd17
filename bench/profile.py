"""Where a tether worker's time goes: py-spy samples a real worker process during W1, W3,
W4 or W8 and the stacks are folded into a per-function table (self and inclusive share).
W8 runs its workers as W8 does (``llm_workers`` x ``llm_concurrency``, ``--jobs`` jobs of
``llm_calls`` calls) and samples the first.

    python -m bench.profile W1 --backend postgres [--jobs 3000] [--idle] [--top 30]

Needs ``py-spy`` (pip install py-spy; root or ptrace rights). ``--idle`` keeps samples of
threads that are waiting (wall-clock view: lock waits, fsync, network round trips);
without it only running threads are counted (CPU view); ``--gil`` keeps only the thread
holding the GIL. Raw stacks are kept under
bench/results/profiles/ for flame graphs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from .apps import make_app
from .backends import SCRATCH, TetherDB, stop, tether_worker, wait_for
from .config import RESULTS, sizes
from .measure import StampFile, pickup_latencies
from .workloads.w1_throughput import enqueue

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]+)(?::\d+)?\)$")


def fold(raw: Path, top: int) -> str:
    """Per-function self and inclusive sample shares from py-spy's raw (collapsed) output."""
    self_c: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        count = int(n)
        total += count
        names = []
        for frame in stack.split(";"):
            m = FRAME.match(frame.strip())
            if not m:
                continue
            path = m.group("file")
            short = path.split("site-packages/")[-1].split("/src/")[-1].split("lib/python3")[-1]
            names.append(f"{m.group('func')} ({short})")
        if not names:
            continue
        self_c[names[-1]] += count
        for name in set(names):
            incl[name] += count
    if not total:
        return "no samples"
    out = [f"{total} samples", "", "self %  function (file)"]
    out += [f"{100 * c / total:5.1f}  {name}" for name, c in self_c.most_common(top)]
    out += ["", "incl %  function (file)   [tether, psycopg, sqlite3 frames only]"]
    keep = [(n, c) for n, c in incl.most_common() if any(k in n for k in
                                                         ("tether/", "psycopg", "sqlite3"))]
    out += [f"{100 * c / total:5.1f}  {name}" for name, c in keep[:top]]
    return "\n".join(out)


def record(pid: int, out: Path, seconds: float, idle: bool,
           gil: bool = False) -> subprocess.Popen:
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    cmd = [exe, "record", "-p", str(pid), "-o", str(out), "-f", "raw", "-r", "250",
           "-d", str(int(seconds)), "--nonblocking", "--threads"]
    if idle:
        cmd.append("--idle")
    if gil:
        cmd.append("--gil")
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workload", choices=["W1", "W3", "W4", "W8"])
    p.add_argument("--backend", default="sqlite", choices=["sqlite", "postgres"])
    p.add_argument("--jobs", type=int, default=3000, help="W1 and W8 jobs / W4 calls")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--idle", action="store_true", help="wall-clock view (waits included)")
    p.add_argument("--gil", action="store_true",
                   help="only the thread holding the GIL (where a CPU-bound worker's time goes)")
    p.add_argument("--top", type=int, default=30)
    args = p.parse_args(argv)
    sz = sizes(False)
    outdir = RESULTS / "profiles"
    outdir.mkdir(parents=True, exist_ok=True)
    raw = outdir / (f"{args.workload}-{args.backend}-{'wall' if args.idle else 'cpu'}-"
                    f"{time.strftime('%Y%m%d-%H%M%S')}.txt")
    db = TetherDB(args.backend, f"prof{args.workload}")
    app = make_app(db.url)
    procs = []
    try:
        if args.workload == "W1":
            enqueue(app, args.jobs)
        elif args.workload == "W4":
            app.submit("calls", {"n": args.jobs, "bill": str(SCRATCH / "prof.bill"),
                                 "concurrency": 8})
        elif args.workload == "W8":
            payload = {"calls": sz.llm_calls, "latency_s": sz.llm_latency_s,
                       "bill": str(SCRATCH / "prof.bill")}
            for i in range(0, args.jobs, 1_000):
                app.submit_many([{"type": "llm", "payload": payload}
                                 for _ in range(min(1_000, args.jobs - i))])
        app.store
        count, conc = {"W4": (1, 1), "W8": (sz.llm_workers, sz.llm_concurrency)}.get(
            args.workload, (1, sz.concurrency))
        procs = [tether_worker(db.url, concurrency=conc, poll_interval=sz.poll_interval,
                               name=f"profile-{args.workload}-{i}") for i in range(count)]
        wait_for(lambda: db.scalar("SELECT count(*) FROM workers") >= count, timeout=30)
        spy = record(procs[0].pid, raw, args.seconds, args.idle, args.gil)
        t = time.monotonic()
        if args.workload == "W3":
            stamps = StampFile(SCRATCH / "prof.stamps")
            n = int(args.seconds / 0.1)
            res = pickup_latencies(lambda m: app.submit("stamp", {"path": str(stamps.path),
                                                                  "marker": m}),
                                   stamps, n, gap=sz.latency_gap_s)
            print(f"pickup during profile: {res}", file=sys.stderr)
        _, err = spy.communicate(timeout=args.seconds + 60)
        done = db.count()
        print(f"{args.workload} {args.backend}: {done} jobs succeeded while sampling "
              f"{time.monotonic() - t:.1f}s", file=sys.stderr)
        if not raw.exists():
            print(f"py-spy wrote nothing: {err.decode()[-500:]}", file=sys.stderr)
            return 1
        print(fold(raw, args.top))
        print(f"\nraw stacks: {raw}", file=sys.stderr)
        return 0
    finally:
        stop(procs)
        app.close()
        db.drop()


if __name__ == "__main__":
    sys.exit(main())
