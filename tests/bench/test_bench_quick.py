"""The benchmark harness in its tiny mode, in a subprocess, so it cannot rot unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench import call_floor
from tests.conftest import ROOT

WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7")


@pytest.mark.timeout(180)
def test_quick_mode_writes_every_workload(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--peers", "none", "--quiet",
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=170)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
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
    assert {t["target"] for t in res["targets"]}, "targets are evaluated"
