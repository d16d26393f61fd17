"""The targets (bench/README.md), judged on one run's figures: each with its value, its limit,
met or missed (None when a figure is missing: workload or peer not run), and the figures in
words.

A peer is judged at its documented defaults (``pgqueuer``, ``huey``); bulk enqueue against
the strongest pgqueuer figure of the run (any of its rows)."""

from __future__ import annotations

from .stats import ratio


def get(d: dict | None, *path, default=None):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return default
        d = d[p]
    return d


def fmt(v, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}"


def backend_name(b: str) -> str:
    return "SQLite" if b == "sqlite" else "PostgreSQL"


def targets(res: dict) -> list[dict]:
    w = res["workloads"]
    ceil = res["ceilings"]
    out: list[dict] = []

    def add(name: str, value, limit, met, note: str = "") -> None:
        out.append({"target": name, "value": value, "limit": limit,
                    "met": None if met is None else bool(met), "note": note})

    def at_least(name: str, a, b, factor: float, what: str, unit: str = "jobs/s") -> None:
        r = ratio(a, b)
        add(name, r, factor, None if r is None else r >= factor,
            f"tether {fmt(a)} {unit} vs {what} {fmt(b)}")

    for k in ("p1", "p2"):
        n = k[1]
        t = get(w, "W1", "postgres", "tether", k, "jobs_per_s")
        at_least(f"W1 PostgreSQL {n} proc: >= x3 pgqueuer at its defaults", t,
                 get(w, "W1", "postgres", "peers", "pgqueuer", k, "jobs_per_s"), 3.0,
                 "pgqueuer")
        at_least(f"W1 PostgreSQL {n} proc: >= half the batched probe", t,
                 get(w, "W1", "postgres", "probe", k, "jobs_per_s"), 0.5, "probe")
        t = get(w, "W1", "sqlite", "tether", k, "jobs_per_s")
        at_least(f"W1 SQLite {n} proc: >= x4 huey at its defaults", t,
                 get(w, "W1", "sqlite", "peers", "huey", k, "jobs_per_s"), 4.0, "huey")
        at_least(f"W1 SQLite {n} proc: >= x2 the one-row commit rate", t,
                 get(ceil, "sqlite", "commits_per_s"), 2.0, "one-row commits/s", "jobs/s")
    pgq = [get(d, "batch_jobs_per_s") for name, d in
           (get(w, "W2", "postgres", "peers") or {}).items() if name.startswith("pgqueuer")]
    pgq = [v for v in pgq if v is not None]
    at_least("W2 PostgreSQL bulk enqueue: >= pgqueuer's (its strongest row)",
             get(w, "W2", "postgres", "tether", "batch_jobs_per_s"), max(pgq) if pgq else None,
             1.0, "pgqueuer")
    for key, limit in (("p50_ms", 1.5), ("p99_ms", 3.0)):
        v = get(w, "W3", "postgres", "tether", key)
        floor = get(w, "W3", "postgres", "floor", key)
        add(f"W3 PostgreSQL pickup {key[:3]} <= {limit} ms", v, limit,
            None if v is None else v <= limit,
            f"{fmt(v, 2)} ms" + (f"; floor {fmt(floor, 2)} ms" if floor is not None else ""))
    for c, row in (get(w, "W4", "sqlite", "in_flight") or {}).items():
        pct = row.get("pct_of_floor")
        add(f"W4 SQLite {c} calls in flight: >= 90 % of the floor", pct, 90.0,
            None if pct is None else pct >= 90,
            f"tether {fmt(get(row, 'tether', 'calls_per_s'))} vs floor "
            f"{fmt(get(row, 'floor', 'calls_per_s'))} calls/s")
        x = row.get("cpu_x_floor")
        add(f"W4 SQLite {c} calls in flight: CPU per call <= x1.5 the floor's", x, 1.5,
            None if x is None else x <= 1.5,
            f"tether {fmt(get(row, 'tether', 'cpu_us_per_call'))} us vs floor "
            f"{fmt(get(row, 'floor', 'cpu_us_per_call'))} us")
    for b in ("sqlite", "postgres"):
        d = get(w, "W8", b, "tether") or {}
        over = d.get("over_ideal_pct")
        add(f"W8 {backend_name(b)} drain within 10 % of the latency-bound ideal", over, 10.0,
            None if over is None else over <= 10,
            f"{fmt(d.get('drain_s'), 2)} s vs ideal {fmt(d.get('ideal_s'), 2)} s")
    for b in ("sqlite", "postgres"):
        for key, label in (("ratio_queued_big", "big queue / small queue"),
                           ("ratio_finished_big", "small queue + big finished / small queue")):
            r = get(w, "W5", b, key)
            add(f"W5 {backend_name(b)} claim cost {label} < 1.5", r, 1.5,
                None if r is None else r < 1.5)
    for b in ("sqlite", "postgres"):
        r = get(w, "W10", b, "claim", "ratio")
        add(f"W10 {backend_name(b)} claim cost beside the big finished table < 1.5", r, 1.5,
            None if r is None else r < 1.5)
        for where, name in (("list", "state_failed"), ("http", "state_failed"),
                            ("http", "dashboard_first_page")):
            p99 = get(w, "W10", b, where, name, "p99_ms")
            add(f"W10 {backend_name(b)} {where} {name} p99 < 100 ms", p99, 100.0,
                None if p99 is None else p99 < 100)
    for b in ("sqlite", "postgres"):
        g = get(w, "W7", b, "tether", "growth_pct")
        capped = get(w, "W7", b, "tether", "capped")
        add(f"W7 {backend_name(b)} worker RSS growth < 10%", g, 10.0,
            None if g is None else g < 10, "run cut short (see jobs_high)" if capped else "")
    return out
