"""Turning results into the targets of issue 8 and a table (rich when available)."""

from __future__ import annotations

from . import call_floor
from .stats import ratio


def _get(d: dict | None, *path, default=None):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return default
        d = d[p]
    return d


def targets(res: dict) -> list[dict]:
    """Each target of issue 8 with the figures it was judged on; ``met`` is None when the
    figures are missing (workload or peer not run)."""
    w = res["workloads"]
    ceil = res["ceilings"]
    out: list[dict] = []

    def add(name: str, value, limit, met, note: str = "") -> None:
        out.append({"target": name, "value": value, "limit": limit,
                    "met": None if met is None else bool(met), "note": note})

    for k in ("p1", "p2"):
        t = _get(w, "W1", "postgres", "tether", k, "jobs_per_s")
        p = _get(w, "W1", "postgres", "peers", "pgqueuer", k, "jobs_per_s")
        r = ratio(t, p)
        add(f"W1 PostgreSQL {k[1]} proc: >= 2x pgqueuer", r, 2.0, None if r is None else r >= 2,
            f"tether {_n(t)} vs pgqueuer {_n(p)} jobs/s")
        t = _get(w, "W1", "sqlite", "tether", k, "jobs_per_s")
        h = _get(w, "W1", "sqlite", "peers", "huey", k, "jobs_per_s")
        r = ratio(t, h)
        add(f"W1 SQLite {k[1]} proc: >= 3x huey", r, 3.0, None if r is None else r >= 3,
            f"tether {_n(t)} vs huey {_n(h)} jobs/s")
        for b in ("sqlite", "postgres"):
            t = _get(w, "W1", b, "tether", k, "jobs_per_s")
            c = _get(ceil, b, "commits_per_s")
            r = ratio(t, c)
            add(f"W1 {_b(b)} {k[1]} proc: above one-row-commit rate", r, 1.0,
                None if r is None else r > 1, f"tether {_n(t)} jobs/s vs {_n(c)} commits/s")
    t = _get(w, "W3", "postgres", "tether", "p50_ms")
    p = _get(w, "W3", "postgres", "peers", "pgqueuer", "p50_ms")
    add("W3 PostgreSQL p50 pickup <= pgqueuer's", ratio(t, p), 1.0,
        None if t is None or p is None else t <= p, f"tether {_n(t, 1)} ms vs pgqueuer {_n(p, 1)} ms")
    for b in ("sqlite", "postgres"):
        for key, label in (("ratio_queued_big", "big queue / small queue"),
                           ("ratio_finished_big", "small queue + big finished / small queue")):
            r = _get(w, "W5", b, key)
            add(f"W5 {_b(b)} claim cost {label} < 1.5", r, 1.5, None if r is None else r < 1.5)
    t = _get(w, "W4", "sqlite", "tether", "calls_per_s")
    c = _get(ceil, "sqlite", "commits_per_s")
    r = ratio(t, c)
    add("W4 SQLite journaled calls/s above SQLite one-row-commit rate", r, 1.0,
        None if r is None else r > 1, f"{_n(t)} calls/s vs {_n(c)} commits/s")
    for b in ("sqlite", "postgres"):
        g = _get(w, "W7", b, "tether", "growth_pct")
        capped = _get(w, "W7", b, "tether", "capped")
        add(f"W7 {_b(b)} worker RSS growth < 10%", g, 10.0, None if g is None else g < 10,
            "run cut short (see jobs_high)" if capped else "")
    return out


def _b(b: str) -> str:
    return "SQLite" if b == "sqlite" else "PostgreSQL"


def _n(v, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}"


def rows(res: dict) -> list[list[str]]:
    """Workload | metric | SQLite tether | SQLite peers | PostgreSQL tether | PostgreSQL peers."""
    w = res["workloads"]
    ceil = res["ceilings"]
    out: list[list[str]] = []

    def peers_cell(b: str, wl: str, path: tuple, tether_v, digits=0, unit="") -> str:
        peers = _get(w, wl, b, "peers") or {}
        cells = []
        for name, d in peers.items():
            if "error" in d and len(d) == 1:
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
    t2 = Table(title="issue 8 targets")
    for h in ("target", "value", "limit", "met", "figures"):
        t2.add_column(h, overflow="fold")
    for t in tg:
        met = {True: "[green]met[/]", False: "[red]missed[/]", None: "n/a"}[t["met"]]
        t2.add_row(escape(t["target"]), _n(t["value"], 2) if isinstance(t["value"], float) else
                   _n(t["value"]), _n(t["limit"], 1), met, escape(t["note"]))
    console.print(t2)


def markdown(res: dict) -> str:
    """The table and the targets as Markdown (for bench/README.md)."""
    headers = ["", "metric", "SQLite: tether", "SQLite: peers", "PostgreSQL: tether",
               "PostgreSQL: peers"]
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    for r in rows(res):
        lines.append("| " + " | ".join(c.replace("|", "/") for c in r) + " |")
    lines += ["", "| target | value | limit | met | figures |", "| --- | --- | --- | --- | --- |"]
    for t in targets(res):
        met = {True: "**met**", False: "**missed**", None: "n/a"}[t["met"]]
        v = t["value"]
        lines.append(f"| {t['target']} | {_n(v, 2) if isinstance(v, float) else _n(v)} | "
                     f"{_n(t['limit'], 1)} | {met} | {t['note']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import json
    import sys
    with open(sys.argv[1]) as fh:
        data = json.load(fh)
    data["targets"] = targets(data)
    print(markdown(data))
