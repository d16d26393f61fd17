"""The targets (bench/README.md, "Targets"), judged on one run's figures: each with its value,
its limit, met or missed (None when a figure is missing: workload, floor or peer not run),
and the figures in words. Rows marked ``judged: False`` are reported beside the targets and
never met or missed: figures the targets ask to see without setting a limit on them.

Every limit is set against something measured in the same run, because this machine's speed
moves by 2-3x within hours: a peer at its documented defaults (``pgqueuer``, ``huey``), a
no-engine floor (W3's pickup floor, W4's call floor of the same mechanism), the latency-bound
ideal (W8), plain jobs (W11), a newcomer's wait with no backlog (W12). The drains against
the peers are guards, not goals: a fall below them is a regression to look at.

W9 (scale-out) has no target: on 2 cores its steps measure CPU more than contention; its
table and plot are reported by ``bench.plot``."""

from __future__ import annotations

from .stats import ratio

PG_DRAIN_X_PGQUEUER = 1.8
SQLITE_DRAIN_X_HUEY = 2.0
SQLITE_DRAIN_X_COMMITS = 2.0
PICKUP_P50_OVER_FLOOR_MS = 1.0
PICKUP_P99_OVER_FLOOR_MS = 2.0
CALLS_PCT_OF_FLOOR = 75.0
CALLS_JUDGED_IN_FLIGHT = (8, 64)
"""W4 is judged at these numbers of calls in flight; any other level the run measured (256
in a full run) is reported only."""
LLM_OVER_IDEAL_PCT = 10.0
FANOUT_JUDGED_CHILDREN = 10_000
FANOUT_X_PLAIN = 1.5
FAIR_DRAIN_X_STRICT = 0.90

W4_PAIRS = (("threads_", "threads: the ctx.map job vs the floor's threads variant"),
            ("async_", "coroutines: the async def job vs the floor's coroutine variant"))
"""W4 like for like: (key prefix in a ``W4 in_flight`` row, what it sets against what)."""


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


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


class _Judge:
    """Collects target rows; a comparison with a missing side is None (not measured)."""

    def __init__(self) -> None:
        self.out: list[dict] = []

    def add(self, name: str, value, limit, met, note: str = "", judged: bool = True) -> None:
        self.out.append({"target": name, "value": value, "limit": limit,
                         "met": None if met is None or not judged else bool(met),
                         "note": note, "judged": judged})

    def report(self, name: str, value, note: str = "") -> None:
        self.add(name, value, None, None, note, judged=False)

    def at_least(self, name: str, value, limit, note: str = "") -> None:
        self.add(name, value, limit, None if value is None or limit is None else value >= limit,
                 note)

    def at_most(self, name: str, value, limit, note: str = "") -> None:
        self.add(name, value, limit, None if value is None or limit is None else value <= limit,
                 note)

    def times(self, name: str, a, b, factor: float, what: str, unit: str = "jobs/s") -> None:
        self.at_least(name, ratio(a, b), factor, f"tether {fmt(a)} {unit} vs {what} {fmt(b)}")


def targets(res: dict) -> list[dict]:
    w = res["workloads"]
    j = _Judge()
    _drain(j, w, res.get("ceilings") or {})
    _enqueue_and_pickup(j, w)
    _calls(j, w)
    _llm(j, w)
    _scale(j, w)
    _fanout(j, w)
    _fairness(j, w, get(res, "meta", "sizes", "poll_interval"))
    return j.out


def _drain(j: _Judge, w: dict, ceil: dict) -> None:
    for k in ("p1", "p2"):
        n = k[1]
        t = get(w, "W1", "postgres", "tether", k, "jobs_per_s")
        j.times(f"W1 PostgreSQL {n} proc: >= x{PG_DRAIN_X_PGQUEUER} pgqueuer at its defaults "
                "(guard)", t, get(w, "W1", "postgres", "peers", "pgqueuer", k, "jobs_per_s"),
                PG_DRAIN_X_PGQUEUER, "pgqueuer")
        t = get(w, "W1", "sqlite", "tether", k, "jobs_per_s")
        j.times(f"W1 SQLite {n} proc: >= x{SQLITE_DRAIN_X_HUEY:g} huey at its defaults (guard)",
                t, get(w, "W1", "sqlite", "peers", "huey", k, "jobs_per_s"),
                SQLITE_DRAIN_X_HUEY, "huey")
        j.times(f"W1 SQLite {n} proc: >= x{SQLITE_DRAIN_X_COMMITS:g} the one-row commit rate",
                t, get(ceil, "sqlite", "commits_per_s"), SQLITE_DRAIN_X_COMMITS,
                "one-row commits/s")


def _enqueue_and_pickup(j: _Judge, w: dict) -> None:
    pgq = [get(d, "batch_jobs_per_s") for name, d in
           (get(w, "W2", "postgres", "peers") or {}).items() if name.startswith("pgqueuer")]
    pgq = [v for v in pgq if v is not None]
    j.times("W2 PostgreSQL bulk enqueue: >= pgqueuer's (its strongest row)",
            get(w, "W2", "postgres", "tether", "batch_jobs_per_s"), max(pgq) if pgq else None,
            1.0, "pgqueuer")
    for key, over in (("p50_ms", PICKUP_P50_OVER_FLOOR_MS), ("p99_ms", PICKUP_P99_OVER_FLOOR_MS)):
        v = get(w, "W3", "postgres", "tether", key)
        floor = get(w, "W3", "postgres", "floor", key)
        j.at_most(f"W3 PostgreSQL pickup {key[:3]} <= the no-engine floor + {over:g} ms", v,
                  _plus(floor, over), f"{fmt(v, 2)} ms; floor {fmt(floor, 2)} ms")


def _calls(j: _Judge, w: dict) -> None:
    for c, row in sorted((get(w, "W4", "sqlite", "in_flight") or {}).items(),
                         key=lambda kv: int(kv[0])):
        judged = int(c) in CALLS_JUDGED_IN_FLIGHT
        for prefix, what in W4_PAIRS:
            pct, x = row.get(f"{prefix}pct_of_floor"), row.get(f"{prefix}cpu_x_floor")
            job = "tether" if prefix == "threads_" else "tether_async"
            floor = "floor_threads" if prefix == "threads_" else "floor"
            note = (f"{what}: {fmt(get(row, job, 'calls_per_s'))} vs "
                    f"{fmt(get(row, floor, 'calls_per_s'))} calls/s")
            name = f"W4 SQLite {c} calls in flight, {prefix[:-1]}"
            if judged:
                j.at_least(f"{name}: >= {CALLS_PCT_OF_FLOOR:g} % of the floor", pct,
                           CALLS_PCT_OF_FLOOR, note)
            else:
                j.report(f"{name}: % of the floor", pct, note)
            j.report(f"{name}: CPU a call, x the floor's", x,
                     f"{fmt(get(row, job, 'cpu_us_per_call'))} us vs "
                     f"{fmt(get(row, floor, 'cpu_us_per_call'))} us")


def _llm(j: _Judge, w: dict) -> None:
    for b in ("sqlite", "postgres"):
        d = get(w, "W8", b, "tether") or {}
        j.at_most(f"W8 {backend_name(b)} drain within {LLM_OVER_IDEAL_PCT:g} % of the "
                  "latency-bound ideal", d.get("over_ideal_pct"), LLM_OVER_IDEAL_PCT,
                  f"{fmt(d.get('drain_s'), 2)} s vs ideal {fmt(d.get('ideal_s'), 2)} s")


def _scale(j: _Judge, w: dict) -> None:
    """Claim cost against table size (W5, W10), list latency (W10), worker memory (W7)."""
    for b in ("sqlite", "postgres"):
        for key, label in (("ratio_queued_big", "big queue / small queue"),
                           ("ratio_finished_big", "small queue + big finished / small queue")):
            r = get(w, "W5", b, key)
            j.add(f"W5 {backend_name(b)} claim cost {label} < 1.5", r, 1.5,
                  None if r is None else r < 1.5)
    for b in ("sqlite", "postgres"):
        r = get(w, "W10", b, "claim", "ratio")
        j.add(f"W10 {backend_name(b)} claim cost beside the big finished table < 1.5", r, 1.5,
              None if r is None else r < 1.5)
        for where, name in (("list", "state_failed"), ("http", "state_failed"),
                            ("http", "dashboard_first_page")):
            p99 = get(w, "W10", b, where, name, "p99_ms")
            j.add(f"W10 {backend_name(b)} {where} {name} p99 < 100 ms", p99, 100.0,
                  None if p99 is None else p99 < 100)
    for b in ("sqlite", "postgres"):
        g = get(w, "W7", b, "tether", "growth_pct")
        capped = get(w, "W7", b, "tether", "capped")
        j.add(f"W7 {backend_name(b)} worker RSS growth < 10%", g, 10.0,
              None if g is None else g < 10, "run cut short (see jobs_high)" if capped else "")


def _fanout(j: _Judge, w: dict) -> None:
    """The parent of 10,000 children against 10,000 plain jobs; every size the run measured
    (1,000 / 10,000 / 100,000 in a full run) reported with the parent's peak RSS."""
    for b in ("sqlite", "postgres"):
        sizes = get(w, "W11", b, "tether") or {}
        for n in sorted(sizes, key=int):
            d = sizes[n]
            note = (f"fan-out {fmt(d.get('fanout_s'), 2)} s vs plain {fmt(d.get('plain_s'), 2)}"
                    f" s; parent peak RSS {fmt(d.get('parent_peak_rss_kb'))} kB")
            if int(n) != FANOUT_JUDGED_CHILDREN:
                j.report(f"W11 {backend_name(b)} {int(n):,} children: fan-out / plain",
                         d.get("ratio"), note)
        d = sizes.get(str(FANOUT_JUDGED_CHILDREN)) or {}
        j.at_most(f"W11 {backend_name(b)} {FANOUT_JUDGED_CHILDREN:,} children within "
                  f"x{FANOUT_X_PLAIN} the time of as many plain jobs", d.get("ratio"),
                  FANOUT_X_PLAIN,
                  f"fan-out {fmt(d.get('fanout_s'), 2)} s vs plain {fmt(d.get('plain_s'), 2)} s;"
                  f" parent peak RSS {fmt(d.get('parent_peak_rss_kb'))} kB" if d else "")


def _fairness(j: _Judge, w: dict, poll_interval: float | None) -> None:
    """B's wait p50 behind A's backlog with fair dispatch within B alone's wait p50 plus one
    worker poll interval (the most a newcomer can owe to a worker that was asleep when it
    arrived), and the drain of every job with fair dispatch at least 0.90 of strict order's."""
    for b in ("sqlite", "postgres"):
        d = get(w, "W12", b, "tether") or {}
        alone, fair = get(d, "alone", "b_wait_p50_s"), get(d, "fair", "b_wait_p50_s")
        j.at_most(f"W12 {backend_name(b)} B's wait p50 behind A's backlog <= B alone's + one "
                  "poll interval", fair, _plus(alone, poll_interval),
                  f"fair {fmt(fair, 3)} s; alone {fmt(alone, 3)} s; poll interval "
                  f"{fmt(poll_interval, 2)} s; strict {fmt(get(d, 'strict', 'b_wait_p50_s'), 3)} s")
        j.at_least(f"W12 {backend_name(b)} drain fair / strict >= {FAIR_DRAIN_X_STRICT:.2f}",
                   d.get("drain_fair_vs_strict"), FAIR_DRAIN_X_STRICT,
                   f"fair {fmt(get(d, 'fair', 'drain_jobs_per_s'))} vs strict "
                   f"{fmt(get(d, 'strict', 'drain_jobs_per_s'))} jobs/s")
