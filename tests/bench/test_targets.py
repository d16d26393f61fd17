"""A run's figures judged against the targets as bench/README.md states them: each limit set
against what the same run measured, each side of every limit, and figures reported only."""

from __future__ import annotations

import pytest

from bench.report import markdown
from bench.targets import targets


def _run(**workloads) -> dict:
    return {"meta": {"sizes": {"poll_interval": 0.5}}, "ceilings": {},
            "workloads": workloads}


def _judged(res: dict, start: str) -> dict:
    (row,) = [t for t in targets(res) if t["target"].startswith(start)]
    return row


def _pickup(p50: float, p99: float) -> dict:
    return {"postgres": {"tether": {"p50_ms": p50, "p99_ms": p99},
                         "floor": {"p50_ms": 3.17, "p99_ms": 4.29}}}


@pytest.mark.parametrize(("p50", "met"), [(3.17 + 0.9, True), (3.17 + 1.1, False)])
def test_pickup_p50_is_judged_against_the_floor_of_the_same_run(p50, met):
    row = _judged(_run(W3=_pickup(p50, 4.29)), "W3 PostgreSQL pickup p50")
    assert row["met"] is met and row["limit"] == pytest.approx(4.17)


@pytest.mark.parametrize(("p99", "met"), [(4.29 + 1.9, True), (4.29 + 2.1, False)])
def test_pickup_p99_is_judged_against_the_floor_of_the_same_run(p99, met):
    assert _judged(_run(W3=_pickup(3.0, p99)), "W3 PostgreSQL pickup p99")["met"] is met


def test_pickup_without_its_floor_is_not_judged():
    res = _run(W3={"postgres": {"tether": {"p50_ms": 1.0, "p99_ms": 2.0}}})
    assert _judged(res, "W3 PostgreSQL pickup p50")["met"] is None


def _drain(tether: float, peer: float, backend: str, name: str) -> dict:
    return {backend: {"tether": {"p1": {"jobs_per_s": tether}, "p2": {"jobs_per_s": tether}},
                      "peers": {name: {"p1": {"jobs_per_s": peer},
                                       "p2": {"jobs_per_s": peer}}}}}


@pytest.mark.parametrize(("tether", "met"), [(1_850.0, True), (1_750.0, False)])
def test_postgres_drain_guard_is_x1_8_pgqueuer(tether, met):
    res = _run(W1=_drain(tether, 1_000.0, "postgres", "pgqueuer"))
    for n in ("1", "2"):
        assert _judged(res, f"W1 PostgreSQL {n} proc: >= x1.8 pgqueuer")["met"] is met
    assert not any("probe" in t["target"] for t in targets(res))  # dropped


@pytest.mark.parametrize(("tether", "met"), [(2_050.0, True), (1_950.0, False)])
def test_sqlite_drain_guard_is_x2_huey(tether, met):
    res = _run(W1=_drain(tether, 1_000.0, "sqlite", "huey"))
    assert _judged(res, "W1 SQLite 1 proc: >= x2 huey")["met"] is met


def _calls(pct: float) -> dict:
    row = {"threads_pct_of_floor": pct, "threads_cpu_x_floor": 1.9,
           "async_pct_of_floor": pct, "async_cpu_x_floor": 1.4,
           "tether": {"calls_per_s": 10.0, "cpu_us_per_call": 1.0},
           "floor_threads": {"calls_per_s": 10.0, "cpu_us_per_call": 1.0},
           "tether_async": {"calls_per_s": 10.0, "cpu_us_per_call": 1.0},
           "floor": {"calls_per_s": 10.0, "cpu_us_per_call": 1.0}}
    return {"sqlite": {"in_flight": {"8": row, "64": row, "256": row}}}


@pytest.mark.parametrize(("pct", "met"), [(76.0, True), (74.0, False)])
def test_journaled_calls_are_judged_like_for_like_at_8_and_64(pct, met):
    res = _run(W4=_calls(pct))
    for c in (8, 64):
        for mech in ("threads", "async"):
            assert _judged(res, f"W4 SQLite {c} calls in flight, {mech}: >=")["met"] is met
    rows = [t for t in targets(res) if t["target"].startswith("W4")]
    # 256 in flight and the CPU a call are reported, never met or missed
    reported = [t for t in rows if not t["judged"]]
    assert {t["target"] for t in reported} >= {
        "W4 SQLite 256 calls in flight, threads: % of the floor",
        "W4 SQLite 8 calls in flight, async: CPU a call, x the floor's"}
    assert all(t["met"] is None and t["value"] is not None for t in reported)
    assert len(rows) - len(reported) == 4


@pytest.mark.parametrize(("fan_s", "met"), [(14.9, True), (15.1, False)])
def test_fanout_at_10000_children_within_x1_5_plain_jobs(fan_s, met):
    sizes = {str(n): {"ratio": fan_s / 10.0 if n == 10_000 else 1.0, "fanout_s": fan_s,
                      "plain_s": 10.0, "parent_peak_rss_kb": 50_000}
             for n in (1_000, 10_000, 100_000)}
    res = _run(W11={"sqlite": {"tether": sizes}, "postgres": {"tether": sizes}})
    for b in ("SQLite", "PostgreSQL"):
        assert _judged(res, f"W11 {b} 10,000 children within x1.5")["met"] is met
        for n in ("1,000", "100,000"):
            assert _judged(res, f"W11 {b} {n} children")["judged"] is False


def _fair(alone: float, fair: float, drain_ratio: float) -> dict:
    return {"sqlite": {"tether": {"alone": {"b_wait_p50_s": alone},
                                  "fair": {"b_wait_p50_s": fair, "drain_jobs_per_s": 900.0},
                                  "strict": {"b_wait_p50_s": 3.0, "drain_jobs_per_s": 1000.0},
                                  "drain_fair_vs_strict": drain_ratio}}}


@pytest.mark.parametrize(("fair", "met"), [(0.05 + 0.49, True), (0.05 + 0.51, False)])
def test_newcomer_wait_behind_a_backlog_within_alone_plus_one_poll(fair, met):
    res = _run(W12=_fair(0.05, fair, 0.95))
    assert _judged(res, "W12 SQLite B's wait p50")["met"] is met


@pytest.mark.parametrize(("drain_ratio", "met"), [(0.91, True), (0.89, False)])
def test_fair_drain_at_least_0_90_of_strict(drain_ratio, met):
    assert _judged(_run(W12=_fair(0.05, 0.05, drain_ratio)), "W12 SQLite drain")["met"] is met


def test_an_empty_run_judges_nothing_and_the_report_prints_it():
    res = _run()
    assert all(t["met"] is None for t in targets(res))
    text = markdown({**res, "meta": {**res["meta"], "mode": "quick", "runs": 1, "date": "-"}})
    assert "W12 PostgreSQL drain fair / strict >= 0.90 | - | 0.90 | n/a |" in text
