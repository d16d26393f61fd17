"""``python -m bench.plot RESULTS.json``: W9's plot (throughput and pickup latency against worker
processes) as an SVG, and its table as Markdown on stdout, from a ``bench.run`` JSON.

    python -m bench.plot bench/results/w9.json                      # -> bench/plots/scale-out.svg
    python -m bench.plot bench/results/w9.json --out /tmp/x.svg --title "run R"

Needs matplotlib (the ``bench`` extra); the table alone does not (``--no-plot``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from collections.abc import Callable

from .config import ROOT
from .pgactivity import IDLE_HOLDER

DEFAULT_OUT = ROOT / "bench" / "plots" / "scale-out.svg"


def steps(res: dict) -> list[dict]:
    """W9's steps (medians over runs) in worker order, each with its ``runs``."""
    got = (res.get("workloads", {}).get("W9", {}) or {}).get("postgres") or {}
    out = [dict(s) for s in (got.get("steps") or {}).values() if s.get("workers")]
    return sorted(out, key=lambda s: s["workers"])


def _n(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _shape(text: str) -> str:
    """SQL with placeholders (``$1``, ``%(name)s``) as ``?`` and whitespace collapsed."""
    return " ".join(re.sub(r"\$\d+|%\(\w+\)s", "?", text).split())


def statement(prefix: str) -> str:
    """The name in ``queries/`` of the statement ``pg_stat_activity`` showed ``prefix``
    of (names joined with ``|`` when several start so), else the prefix itself."""
    if prefix.strip().upper() in ("COMMIT", "BEGIN", "ROLLBACK"):
        return prefix.strip().upper()
    from tether.store.postgres.tx import QUERIES
    want = _shape(prefix)
    names = [n for n, q in QUERIES.items()
             if _shape(q if isinstance(q, str) else str(q)).startswith(want)]
    return "|".join(names) if names else f"`{prefix[:32]}…`"


def _top_lock(step: dict) -> str:
    """The step's most frequent lock waits over its runs: wait event, statement, backends
    caught, and the longest such a statement had been running when caught."""
    count: dict[str, int] = {}
    longest: dict[str, float] = {}
    for run in step.get("runs", []):
        for w in (run.get("activity") or {}).get("lock_waits_top", []):
            key = f"{w['wait_event']}: {statement(w['query'])}"
            count[key] = count.get(key, 0) + w["count"]
            longest[key] = max(longest.get(key, 0.0), w.get("max_running_s") or 0.0)
    top = sorted(count, key=lambda k: -count[k])[:3]
    return "; ".join(f"{k} x{count[k]}"
                     + (f" (one running {longest[k]:.2f} s)" if longest[k] else "")
                     for k in top) or "none"


def _summed(step: dict, field: str, name: Callable[[dict], str], top: int) -> str:
    """The ``top`` entries of the runs' ``activity[field]`` lists, counts summed by
    ``name(entry)``; "-" for runs sampled before ``field`` was recorded."""
    count: dict[str, int] = {}
    seen = False
    for run in step.get("runs", []):
        activity = run.get("activity") or {}
        seen = seen or field in activity
        for entry in activity.get(field, []):
            key = name(entry)
            count[key] = count.get(key, 0) + entry["count"]
    best = sorted(count, key=lambda k: -count[k])[:top]
    return "; ".join(f"{k} x{count[k]}" for k in best) or ("none" if seen else "-")


def _holding(entry: dict) -> str:
    holder = entry["holder"]
    idle = "idle in tx after " if holder.startswith(IDLE_HOLDER) else ""
    return f"{statement(entry['waiter'])} <- {idle}{statement(holder.removeprefix(IDLE_HOLDER))}"


def _top_holders(step: dict) -> str:
    """Which statements held the locks waited on, over the step's runs (waiter <- holder,
    backends caught)."""
    return _summed(step, "blockers_top", _holding, 2)


def _top_where(step: dict) -> str:
    """Where the caught waits were (``pg_locks``: a row lock held while waiting is a row
    wait), over the step's runs."""
    return _summed(step, "waits_where",
                   lambda w: f"{statement(w['waiter'])}: {w['locks']}", 3)


def table(res: dict) -> str:
    pool = ((res.get("workloads", {}).get("W9", {}) or {}).get("postgres") or {}).get("pool", {})
    head = ("| workers x conc. | jobs/s | pickup p50 / p99 (ms) | to claim p50 / p99 (ms) "
            "| markers | max conns: workers (all) | bound | lock-wait samples | lock waits "
            "(top) | held by (top) | where (top) | CPU busy |")
    lines = [head, "| " + " | ".join(["---"] * (head.count("|") - 1)) + " |"]
    for s in steps(res):
        lines.append(
            f"| {int(s['workers'])} x {_n(s.get('concurrency'))}"
            + (f" (prefetch {int(s['prefetch'])})" if s.get("prefetch") is not None else "")
            + f" | {_n(s.get('jobs_per_s'))}"
            + (" (capped)" if any(r.get("capped") for r in s.get("runs", [])) else "")
            + f" | {_n(s.get('pickup_p50_ms'), 1)} / {_n(s.get('pickup_p99_ms'), 1)}"
            f" | {_n(s.get('to_claim_p50_ms'), 1)} / {_n(s.get('to_claim_p99_ms'), 1)}"
            f" | {_n(s.get('markers'))} | {_n(s.get('max_worker_connections'))}"
            f" ({_n(s.get('max_connections'))}) | {_n(s.get('connection_bound'))}"
            f" | {_n(s.get('lock_wait_samples'))} / {_n(s.get('activity_samples'))}"
            f" | {_top_lock(s)} | {_top_holders(s)} | {_top_where(s)}"
            f" | {_n(s.get('cpu_busy_pct'))} % |")
    if pool:
        lines.append("")
        lines.append(f"Bound = workers x ({pool['pool_max_size']} pool + {pool['listener']} "
                     f"LISTEN) = workers x {pool['per_worker']}.")
    return "\n".join(lines)


def plot(res: dict, out: Path, title: str | None = None) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "tether-w9"  # the same data draws the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: a small, diffable file
    import matplotlib.pyplot as plt

    rows = [s for s in steps(res) if s.get("jobs_per_s")]
    if not rows:
        raise SystemExit("no W9 steps with a throughput in this file")
    x = [s["workers"] for s in rows]
    conc = rows[0].get("concurrency")
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    left.plot(x, [s["jobs_per_s"] for s in rows], "o-", color="#1f5fa8")
    left.set_ylabel("jobs/s (drain, first to last completion)")
    left.set_ylim(bottom=0)
    for key, label, style in (("pickup_p50_ms", "pickup p50", "o-"),
                              ("pickup_p99_ms", "pickup p99", "s--"),
                              ("to_claim_p50_ms", "submit to claim p50", "^:")):
        pts = [(s["workers"], s[key]) for s in rows if s.get(key) is not None]
        if pts:
            right.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    right.set_ylabel("marker latency under load (ms)")
    right.set_ylim(bottom=0)
    right.legend(fontsize=8)
    for ax, name in ((left, "throughput"), (right, "claim latency (priority -1 markers)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [str(v) for v in x])
        ax.set_xlabel(f"worker processes (x {conc} concurrency each)")
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
    date = (res.get("meta") or {}).get("date", "")
    fig.suptitle(title or f"W9 scale-out on PostgreSQL ({date[:16]})", fontsize=11)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.plot", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", help="a JSON written by python -m bench.run")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="image path (.svg or .png)")
    p.add_argument("--title", default=None)
    p.add_argument("--no-plot", action="store_true", help="print the table only")
    args = p.parse_args(argv)
    res = json.loads(Path(args.results).read_text())
    print(table(res))
    if not args.no_plot:
        print(f"plot: {plot(res, Path(args.out), args.title)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
