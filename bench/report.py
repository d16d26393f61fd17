"""Turning results into tables (rich when available): tether against the peers and the
floors, each peer row with its settings, and the targets (``bench/targets.py``)."""

from __future__ import annotations

from . import call_floor
from .stats import ratio
from .targets import backend_name as _b
from .targets import fmt as _n
from .targets import get as _get
from .targets import targets
from .workloads.w4_calls import FLOOR_PAIRS


def rows(res: dict) -> list[list[str]]:
    """Workload | metric | SQLite tether | SQLite peers | PostgreSQL tether | PostgreSQL peers."""
    w = res["workloads"]
    ceil = res["ceilings"]
    out: list[list[str]] = []

    def peers_cell(b: str, wl: str, path: tuple, tether_v, digits=0, unit="") -> str:
        peers = _get(w, wl, b, "peers") or {}
        cells = []
        for name, d in peers.items():
            if "skipped" in d or ("error" in d and len(d) == 1):
                cells.append(f"{name}: n/a")
                continue
            v = _get(d, *path)
            r = ratio(tether_v, v)
            cells.append(f"{name} {_n(v, digits)}{unit}" + (f" (tether x{r:.2f})" if r else ""))
        return "; ".join(cells)

    def ceil_note(b: str, v) -> str:
        c = _get(ceil, b, "commits_per_s")
        r = ratio(v, c)
        return f" [x{r:.2f} of DB commits/s]" if r else ""

    for k in ("p1", "p2"):
        row = ["W1", f"throughput, {k[1]} worker proc (jobs/s)"]
        for b in ("sqlite", "postgres"):
            t = _get(w, "W1", b, "tether", k, "jobs_per_s")
            capped = _get(w, "W1", b, "tether", k, "capped")
            row.append(_n(t) + (" (capped)" if capped else "") + ceil_note(b, t) if t else "-")
            row.append(peers_cell(b, "W1", (k, "jobs_per_s"), t))
        out.append(row)
    for k in ("p1", "p2"):
        v = _get(w, "W1", "postgres", "probe", k, "jobs_per_s")
        t = _get(w, "W1", "postgres", "tether", k, "jobs_per_s")
        r = ratio(t, v)
        out.append(["W1", f"batched claim/complete probe, {k[1]} proc (jobs/s)", "-", "",
                    _n(v), "no engine (bench/probe.py)" + (f"; tether x{r:.2f}" if r else "")])
    for k in ("p1", "p2"):
        v = _get(w, "W1", "postgres", "pgbouncer", k, "jobs_per_s")
        if v is not None:
            r = ratio(v, _get(w, "W1", "postgres", "tether", k, "jobs_per_s"))
            out.append(["W1", f"through PgBouncer (transaction mode), {k[1]} proc (jobs/s)",
                        "-", "", _n(v), f"direct x{r:.2f}" if r else ""])
    row = ["W1", "bulk enqueue before drain (jobs/s)"]
    for b in ("sqlite", "postgres"):
        t = _get(w, "W1", b, "tether", "p1", "enqueue_jobs_per_s")
        row += [_n(t), peers_cell(b, "W1", ("p1", "enqueue_jobs_per_s"), t)]
    out.append(row)
    for key, label in (("single_per_s", "enqueue, single submit (jobs/s)"),
                       ("batch_jobs_per_s", "enqueue, submit_many (jobs/s)")):
        row = ["W2", label]
        for b in ("sqlite", "postgres"):
            t = _get(w, "W2", b, "tether", key)
            row += [_n(t) + (ceil_note(b, t) if key == "single_per_s" and t else ""),
                    peers_cell(b, "W2", (key,), t)]
        out.append(row)
    for key, label in (("p50_ms", "pickup latency p50 (ms)"), ("p99_ms", "pickup latency p99 (ms)")):
        row = ["W3", label]
        for b in ("sqlite", "postgres"):
            t = _get(w, "W3", b, "tether", key)
            row += [_n(t, 1), peers_cell(b, "W3", (key,), t, 1)]
        out.append(row)
    for key, label in (("p50_ms", "pickup floor p50 (ms)"), ("p99_ms", "pickup floor p99 (ms)")):
        v = _get(w, "W3", "postgres", "floor", key)
        if v is not None:
            t = _get(w, "W3", "postgres", "tether", key)
            out.append(["W3", label, "-", "", _n(v, 1),
                        "no engine (bench/pickup_floor.py)"
                        + (f"; tether +{t - v:.1f} ms" if t is not None else "")])
    row = ["W4", "journaled calls (calls/s)"]
    for b in ("sqlite", "postgres"):
        t = _get(w, "W4", b, "tether", "calls_per_s")
        bare = _get(w, "W4", b, "provider_alone_calls_per_s")
        row += [_n(t) + ceil_note(b, t) if t else (_get(w, "W4", b, "tether", "runs", default=[{}])
                                                    [0].get("error", "-")),
                f"provider alone {_n(bare)}/s" if bare else ""]
    out.append(row)
    row = ["W4", "journaled calls, async job (calls/s)"]
    for b in ("sqlite", "postgres"):
        t = _get(w, "W4", b, "tether_async", "calls_per_s")
        row += [_n(t) + ceil_note(b, t) if t else "-", ""]
    out.append(row)
    cb = _get(w, "W4", "sqlite", "commit_bound") or {}
    out.append(["W4", "bound set by durable commits alone (calls/s)",
                (f"{_n(cb['bound_calls_per_s'])}{ceil_note('sqlite', cb['bound_calls_per_s'])}: "
                 f"{_n(cb['concurrency'])} calls = 1 commit of {_n(cb['reserve_pages'], 0)} "
                 f"pages ({_n(cb['reserve_commit_us'] / 1000, 2)} ms) + 1 of "
                 f"{_n(cb['settle_pages'], 0)} ({_n(cb['settle_commit_us'] / 1000, 2)} ms)")
                if cb else "-", "an upper limit: no CPU counted", "-", ""])
    for name, variant in call_floor.VARIANTS.items():
        t = _get(w, "W4", "sqlite", "floor", name, "calls_per_s")
        out.append(["W4", variant.label, _n(t) + ceil_note("sqlite", t) if t else "-",
                    variant.note, "-", ""])
    for c, d in (_get(w, "W4", "sqlite", "in_flight") or {}).items():
        for job, floor, prefix, label, note in FLOOR_PAIRS:
            if job not in d or floor not in d:
                continue
            pct, x = d.get(f"{prefix}pct_of_floor"), d.get(f"{prefix}cpu_x_floor")
            out.append(["W4", f"{c} calls in flight: {label} (calls/s; CPU us a call)",
                        f"{_n(_get(d, job, 'calls_per_s'))} / "
                        f"{_n(_get(d, floor, 'calls_per_s'))} ({_n(pct, 1)} %); "
                        f"{_n(_get(d, job, 'cpu_us_per_call'))} / "
                        f"{_n(_get(d, floor, 'cpu_us_per_call'))} us (x{_n(x, 2)})",
                        note, "-", ""])
    row = ["W4", "journaled calls, commits not flushed (diagnostic)"]
    for b in ("sqlite", "postgres"):
        t = _get(w, "W4", b, "tether_nodurable", "calls_per_s")
        row += [_n(t) + ceil_note(b, t) if t else "-", "not durable: never a target"]
    out.append(row)
    for name, label in (("queued_small", "claim, small queue (ms)"),
                        ("queued_big", "claim, big queue (ms)"),
                        ("finished_big", "claim, small queue + big finished (ms)")):
        row = ["W5", label]
        for b in ("sqlite", "postgres"):
            d = _get(w, "W5", b, "tether", name) or {}
            v = d.get("median_ms")
            txt = _n(v, 2) if v is not None else "-"
            if d.get("queued"):
                txt += f" ({d['queued']:,} q / {d['finished']:,} f)"
            if d.get("before_analyze_ms") is not None:
                txt += f"; before ANALYZE {_n(d['before_analyze_ms'], 2)}"
            row += [txt, ""]
        out.append(row)
    row = ["W5", "claim cost ratios (big/small)"]
    for b in ("sqlite", "postgres"):
        a = _get(w, "W5", b, "ratio_queued_big")
        f = _get(w, "W5", b, "ratio_finished_big")
        row += [f"queued x{_n(a, 2)}, finished x{_n(f, 2)}", ""]
    out.append(row)
    row = ["W6", "recovery after SIGKILL (s)"]
    for b in ("sqlite", "postgres"):
        v = _get(w, "W6", b, "tether", "recovery_s")
        ttl = _get(w, "W6", b, "tether", "lease_ttl_s")
        row += [f"{_n(v, 2)} (TTL {_n(ttl, 1)})" if v is not None else "-", ""]
    out.append(row)
    row = ["W7", "worker RSS low -> high (growth)"]
    for b in ("sqlite", "postgres"):
        d = _get(w, "W7", b, "tether") or {}
        if d.get("rss_low_kb"):
            row += [f"{d['rss_low_kb'] / 1024:.1f} MB @{d['jobs_low']:,} -> "
                    f"{d['rss_high_kb'] / 1024:.1f} MB @{d['jobs_high']:,} "
                    f"({d['growth_pct']:+.1f}%)", ""]
        else:
            row += ["-", ""]
    out.append(row)
    for key, label, digits in (("drain_s", "drain (s) vs latency-bound ideal", 2),
                               ("cpu_us_per_call", "worker CPU a call (us)", 0),
                               ("server_cpu_us_per_call", "database server CPU a call (us)", 0),
                               ("commits_per_call", "database commits a call", 2)):
        row = ["W8", f"LLM workload: {label}"]
        for b in ("sqlite", "postgres"):
            d = _get(w, "W8", b, "tether") or {}
            v = d.get(key)
            txt = _n(v, digits)
            if key == "drain_s" and v is not None:
                txt += f" vs {_n(d.get('ideal_s'), 2)} ({d['over_ideal_pct']:+.1f} %)"
            row += [txt, ""]
        out.append(row)
    row = ["W8", "LLM workload: a call beyond its latency (ms)"]
    for b in ("sqlite", "postgres"):
        d = _get(w, "W8", b, "tether") or {}
        if d.get("call_over_latency_ms") is None:
            row += ["-", ""]
            continue
        row += [f"+{d['call_over_latency_ms']:.1f} in it, +{d['between_calls_ms']:.1f} to the "
                f"next; job start +{d['start_to_first_call_ms']:.0f}, end "
                f"+{d['last_call_to_finish_ms']:.0f}", "bench/timeline.py"]
    out.append(row)
    row = ["ceiling", "DB one-row commits/s"]
    for b in ("sqlite", "postgres"):
        c = _get(ceil, b) or {}
        if b == "postgres" and c.get("tps_c1"):
            extra = ", ".join(f"{k[5:]} clients {_n(v)}" for k, v in c.items()
                              if k.startswith("tps_c") and k != "tps_c1")
            row += [_n(c.get("commits_per_s")), f"pgbench 1 client; {extra}"]
        else:
            row += [_n(c.get("commits_per_s")) if c else "-", c.get("error", "")]
    out.append(row)
    return out


PEER_HEADERS = ["peer row", "backend", "W1 1 proc (jobs/s)", "W1 2 procs (jobs/s)",
                "W2 bulk enqueue (jobs/s)", "W2 single (jobs/s)", "W3 p50 / p99 (ms)",
                "settings"]


def peer_rows(res: dict) -> list[list[str]]:
    """One row per peer variant, with the settings it ran at (or why it was skipped)."""
    w = res["workloads"]
    names: dict[tuple[str, str], dict] = {}
    for wl in ("W1", "W2", "W3"):
        for b in ("sqlite", "postgres"):
            for name, d in (_get(w, wl, b, "peers") or {}).items():
                names.setdefault((name, b), {})[wl] = d
    out = []
    for (name, b), by in names.items():
        first = next((d for d in by.values() if d), {})
        runs = _get(by, "W1", "p1", "runs") or _get(by, "W2", "runs") or [{}]
        settings = first.get("settings") or runs[0].get("settings", "")
        if first.get("skipped"):
            out.append([name, _b(b), "skipped", "", "", "", "", f"{settings}; {first['skipped']}"])
            continue
        extra = ", ".join(f"{k} {runs[0][k]}" for k in ("driver", "sqlite_synchronous")
                          if runs[0].get(k))
        out.append([name, _b(b), _n(_get(by, "W1", "p1", "jobs_per_s")),
                    _n(_get(by, "W1", "p2", "jobs_per_s")),
                    _n(_get(by, "W2", "batch_jobs_per_s")), _n(_get(by, "W2", "single_per_s")),
                    f"{_n(_get(by, 'W3', 'p50_ms'), 2)} / {_n(_get(by, 'W3', 'p99_ms'), 2)}",
                    settings + (f" ({extra})" if extra else "")])
    return out


def print_table(res: dict) -> None:
    headers = ["", "metric", "SQLite: tether", "SQLite: peers", "PostgreSQL: tether",
               "PostgreSQL: peers"]
    body = rows(res)
    tg = targets(res)
    try:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich ships with tether
        for r in [headers] + body:
            print(" | ".join(r))
        for t in tg:
            print(t)
        return
    console = Console(width=200)
    table = Table(title=f"tether benchmark ({res['meta']['mode']}, medians of "
                        f"{res['meta']['runs']} runs, {res['meta']['date']})")
    for h in headers:
        table.add_column(h, overflow="fold")
    for r in body:  # cells are text: "[x1.58 of DB commits/s]" is not markup
        table.add_row(*(escape(cell) for cell in r))
    console.print(table)
    t3 = Table(title="peers, each row at the settings it states")
    for h in PEER_HEADERS:
        t3.add_column(h, overflow="fold")
    for r in peer_rows(res):
        t3.add_row(*(escape(cell) for cell in r))
    console.print(t3)
    t2 = Table(title="targets")
    for h in ("target", "value", "limit", "met", "figures"):
        t2.add_column(h, overflow="fold")
    for t in tg:
        met = ({True: "[green]met[/]", False: "[red]missed[/]", None: "n/a"}[t["met"]]
               if t.get("judged", True) else "reported")
        t2.add_row(escape(t["target"]), _n(t["value"], 2) if isinstance(t["value"], float) else
                   _n(t["value"]), _n(t["limit"], 2), met, escape(t["note"]))
    console.print(t2)


def markdown(res: dict) -> str:
    """The table and the targets as Markdown (for bench/README.md)."""
    headers = ["", "metric", "SQLite: tether", "SQLite: peers", "PostgreSQL: tether",
               "PostgreSQL: peers"]
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    for r in rows(res):
        lines.append("| " + " | ".join(c.replace("|", "/") for c in r) + " |")
    lines += ["", "| " + " | ".join(PEER_HEADERS) + " |", "|" + " --- |" * len(PEER_HEADERS)]
    for r in peer_rows(res):
        lines.append("| " + " | ".join(c.replace("|", "/") for c in r) + " |")
    lines += ["", "| target | value | limit | met | figures |", "| --- | --- | --- | --- | --- |"]
    for t in targets(res):
        met = ({True: "**met**", False: "**missed**", None: "n/a"}[t["met"]]
               if t.get("judged", True) else "reported")
        v = t["value"]
        lines.append(f"| {t['target']} | {_n(v, 2) if isinstance(v, float) else _n(v)} | "
                     f"{_n(t['limit'], 2)} | {met} | {t['note']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import json
    import sys
    with open(sys.argv[1]) as fh:
        data = json.load(fh)
    data["targets"] = targets(data)
    print(markdown(data))
