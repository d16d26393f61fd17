"""The benchmark harness in its tiny mode, in a subprocess, so it cannot rot unnoticed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from bench import call_floor
from bench.peers import ALL as ALL_PEERS
from bench.peers.huey_peer import HueyPeer
from tests.conftest import ROOT

WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W10", "W11", "W12")


def _quick(tmp_path, *args: str) -> dict:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--quiet", "--json", str(out), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.timeout(420)
def test_quick_mode_writes_every_workload(tmp_path):
    res = _quick(tmp_path, "--peers", "none", "--only", ",".join(WORKLOADS))  # W9: test_scale.py
    sz = res["meta"]["sizes"]
    assert res["meta"]["mode"] == "quick"
    backends = res["meta"]["backends"]
    assert "sqlite" in backends
    for w in WORKLOADS:
        assert w in res["workloads"], w
        for b in backends:
            got = res["workloads"][w].get(b)
            assert got is not None and "error" not in got, (w, b, got)
    for b in backends:
        assert res["ceilings"][b].get("commits_per_s"), res["ceilings"][b]
        assert res["workloads"]["W1"][b]["tether"]["p1"]["jobs_per_s"] > 0
        assert res["workloads"]["W3"][b]["tether"]["p50_ms"] is not None
        assert res["workloads"]["W5"][b]["ratio_queued_big"] is not None
        # the ctx.map job, the async def job, and the ctx.map job with commits not flushed
        for variant in ("tether", "tether_async", "tether_nodurable"):
            assert res["workloads"]["W4"][b][variant]["calls_per_s"] > 0, variant
    if "postgres" in backends:  # the same hops with no engine, in the same run
        floor = res["workloads"]["W3"]["postgres"]["floor"]
        assert floor["p50_ms"] > 0 and floor["lost"] == 0 and floor["samples"] > 0
    for b in backends:  # W11: a parent's children against as many plain jobs, same run
        (n,) = sz["fanout_children"]
        fan = res["workloads"]["W11"][b]["tether"][str(n)]
        assert fan["runs"][0]["parent_state"] == "succeeded" and fan["runs"][0]["parent_result"] == n
        assert fan["ratio"] > 0 and fan["parent_peak_rss_kb"] > 0
    for b in backends:  # W12: B alone, then behind A's backlog with fair and strict claims
        fair = res["workloads"]["W12"][b]["tether"]
        for mode in ("alone", "fair", "strict"):
            (run,) = fair[mode]["runs"]
            assert run["b_jobs"] == sz["fair_newcomer"] and not run["capped"], (mode, run)
            assert run["b_wait_p50_s"] >= 0 and fair[mode]["drain_jobs_per_s"] > 0
        assert fair["fair"]["runs"][0]["backlog"] == sz["fair_backlog"]
        assert fair["drain_fair_vs_strict"] > 0
    bound = res["workloads"]["W4"]["sqlite"]["commit_bound"]
    # one batch of 8 reservations and one of settlements each write pages, timed exactly
    assert bound["reserve_pages"] >= 1 and bound["settle_pages"] > bound["reserve_pages"]
    assert bound["reserve_commit_frames"] == round(bound["reserve_pages"])
    assert bound["bound_calls_per_s"] > 0
    # the bare floor journals and pays every call it makes, in each of its variants
    floor = res["workloads"]["W4"]["sqlite"]["floor"]
    for variant in call_floor.VARIANTS:
        for run in floor[variant]["runs"]:
            assert run["journaled"] == run["ledger_rows"] == res["meta"]["sizes"]["calls"]
        assert floor[variant]["calls_per_s"] > 0
    # W4 against the floor at each number of calls in flight, with the CPU a call costs
    in_flight = res["workloads"]["W4"]["sqlite"]["in_flight"]
    assert sorted(in_flight, key=int) == [str(c) for c in sz["call_in_flight"]]
    for row in in_flight.values():
        assert row["pct_of_floor"] > 0 and row["cpu_x_floor"] > 0
        assert row["tether"]["cpu_us_per_call"] > 0 and row["floor"]["cpu_us_per_call"] > 0
        # and each job against the floor of its own mechanism: coroutines, threads
        assert row["async_pct_of_floor"] > 0 and row["async_cpu_x_floor"] > 0
        assert row["threads_pct_of_floor"] > 0 and row["threads_cpu_x_floor"] > 0
        assert row["floor_threads"]["cpu_us_per_call"] > 0
    # W8: every job drained, set against the ideal, with CPU and commits per call
    calls = sz["llm_jobs"] * sz["llm_calls"]
    ideal = calls * sz["llm_latency_s"] / (sz["llm_workers"] * sz["llm_concurrency"])
    for b in backends:
        w8 = res["workloads"]["W8"][b]["tether"]
        assert w8["jobs_done"] == sz["llm_jobs"] and w8["calls"] == calls
        assert w8["ideal_s"] == pytest.approx(ideal)
        assert w8["drain_s"] >= ideal  # no drain beats the latency bound
        assert w8["cpu_us_per_call"] > 0
        assert w8["commits"] > 0 and w8["commits_per_call"] > 0  # calls may share commits
        # where the time went, from the rows: a call lasts at least its provider's latency
        assert w8["call_over_latency_ms"] > -1 and w8["between_calls_ms"] >= 0
        assert w8["start_to_first_call_ms"] >= 0 and w8["last_call_to_finish_ms"] >= 0
        assert w8["mean_running"] > 0
        if b == "postgres":  # the server works for every call too
            assert w8["server_cpu_us_per_call"] > 0
    if "postgres" in backends:
        for k in ("p1", "p2"):
            probe = res["workloads"]["W1"]["postgres"]["probe"][k]
            assert probe["jobs_per_s"] > 0
            assert probe["runs"][0]["moved"] == sz["throughput_jobs"]
            assert probe["runs"][0]["events"] == 2 * sz["throughput_jobs"]
        # the same drains through a real PgBouncer (transaction pooling) the harness starts;
        # only a machine without pgbouncer outside CI may skip them
        pooled = res["workloads"]["W1"]["postgres"]["pgbouncer"]
        if "skipped" not in pooled or os.environ.get("CI"):
            for k in ("p1", "p2"):
                assert pooled[k]["jobs_per_s"] > 0
                assert pooled[k]["runs"][0]["done"] == sz["throughput_jobs"]
                assert pooled[k]["runs"][0]["pgbouncer_transactions"] > 0
    for b in backends:
        _check_w10(res["workloads"]["W10"][b], sz)
    _check_targets(res, backends)


def _check_targets(res, backends):
    """The run is judged on the restated targets (tests/bench/test_targets.py checks the
    limits): every workload the quick run measured gives its targets a figure."""
    by_name = {t["target"]: t for t in res["targets"]}
    assert not any("probe" in n for n in by_name)  # dropped as a target
    for b in ("SQLite", "PostgreSQL") if "postgres" in backends else ("SQLite",):
        for start in (f"W8 {b} drain within 10 %", f"W12 {b} B's wait p50",
                      f"W12 {b} drain fair / strict"):
            (row,) = [t for n, t in by_name.items() if n.startswith(start)]
            assert row["judged"] and row["value"] is not None, row
        # the quick run's fan-out size is reported; 10,000 children is a full run's
        (n,) = res["meta"]["sizes"]["fanout_children"]
        assert by_name[f"W11 {b} {n:,} children: fan-out / plain"]["value"] > 0
        assert by_name[f"W11 {b} 10,000 children within x1.5 the time of as many plain "
                       "jobs"]["met"] is None
    if "postgres" in backends:
        assert by_name["W3 PostgreSQL pickup p50 <= the no-engine floor + 1 ms"]["limit"] > 1
    # W4 at 8 in flight is judged like for like; the quick run's other level is reported
    assert by_name["W4 SQLite 8 calls in flight, threads: >= 75 % of the floor"]["judged"]
    assert not by_name["W4 SQLite 16 calls in flight, async: % of the floor"]["judged"]


def _check_w10(w10, sz):
    """Big tables: the rows were built, every claim claimed, every list answered with the
    rows the data implies, and the prune took the oldest half of the finished jobs while
    claims went on."""
    finished, queued = sz["big_finished"], sz["big_queued"]
    assert w10["rows"]["jobs"] == finished + queued + 3  # + the three template jobs
    assert w10["rows"]["job_events"] >= 3 * finished
    assert w10["rows"]["cost_ledger"] == finished
    assert w10["rows"]["job_attempts"] >= finished
    assert w10["claim"]["ratio"] > 0 and "error" not in w10["claim"]
    lists = w10["list"]
    for name in ("default", "state_failed", "project_state_failed", "queue_type"):
        assert lists[name]["rows"] == 50 and lists[name]["p99_ms"] > 0, name
    assert lists["state_cancelled_none"]["rows"] == 0
    assert lists["search_id"]["rows"] == 1 and lists["search_key_none"]["rows"] == 0
    assert w10["cli"]["rows"] == 50
    http = dict(w10["http"])
    scrape = http.pop("metrics_scrape")
    assert scrape["rows"] > 20 and scrape["p50_ms"] > 0
    for name, got in http.items():
        assert got["rows"] == (1 if name == "dashboard_search_id" else 50), name
        assert got["p50_ms"] > 0, name
    prune = w10["prune"]
    assert "error" not in prune
    assert abs(prune["pruned"] - finished * sz["big_prune_fraction"]) <= 0.01 * finished
    assert prune["claims_during"]["n"] > 0 and prune["claims_baseline"]["claimed"] > 0


@pytest.mark.timeout(420)
def test_quick_mode_runs_every_peer_row_at_its_settings(tmp_path):
    """Each peer variant is a row of its own with its settings; a peer whose package is
    absent is recorded as skipped, with why."""
    res = _quick(tmp_path, "--only", "W1,W2", "--peers", ",".join(ALL_PEERS), "--no-ceiling")
    for family, cls in ALL_PEERS.items():
        installed = importlib.util.find_spec(cls.module) is not None
        for variant in cls.VARIANTS:
            peer = cls(variant)
            w1 = res["workloads"]["W1"][cls.backend]["peers"][peer.name]
            w2 = res["workloads"]["W2"][cls.backend]["peers"][peer.name]
            if not installed:
                assert "is not installed" in w1["skipped"] and w2["skipped"]
                continue
            for k in ("p1", "p2"):
                run = w1[k]["runs"][0]
                assert "error" not in run, (peer.name, run)
                assert run["done"] == res["meta"]["sizes"]["throughput_jobs"]
                assert run["settings"] == cls.VARIANTS[variant]
            assert w2["batch_jobs_per_s"] > 0 and w2["single_per_s"] > 0
    if importlib.util.find_spec("huey"):
        runs = res["workloads"]["W1"]["sqlite"]["peers"]
        # what huey's connections really ran with is recorded, for both rows
        assert runs["huey_durable"]["p1"]["runs"][0]["sqlite_synchronous"] == "FULL"
        assert runs["huey"]["p1"]["runs"][0]["sqlite_synchronous"] in (
            "OFF", "NORMAL", "FULL", "EXTRA")


def test_a_peer_without_its_package_is_skipped_and_says_why():
    class Absent(HueyPeer):
        module = "tether_bench_no_such_package"

    ok, why = Absent().available()
    assert not ok and "is not installed" in why
    record = Absent("durable").skipped(why)
    assert record["skipped"] == why and record["variant"] == "durable"
    assert record["settings"] == HueyPeer.VARIANTS["durable"]
