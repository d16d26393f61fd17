"""``tether demo`` end to end; its summary is checked against the simulated provider's bill."""

import json
import os
import subprocess
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from tether.demo import verdict
from tether.providers.simulated import bill_total, read_bill

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_demo_summary_matches_the_providers_bill(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tether.cli.main", "demo", "--dir",
                           str(tmp_path), "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    bill = [e for e in read_bill(tmp_path / "provider-bill.jsonl")
            if e.job_id == summary["job_id"]]
    per_key = Counter(e.key for e in bill)
    assert summary["state"] == "succeeded"
    assert summary["calls_billed"] == len(bill)
    assert Decimal(summary["billed_usd"]) == bill_total(tmp_path / "provider-bill.jsonl")
    assert summary["calls_billed_twice"] == sum(1 for n in per_key.values() if n > 1)
    assert summary["calls_billed_twice"] <= summary["calls_unconfirmed"]
    assert Decimal(summary["spent_usd"]) >= Decimal(summary["billed_usd"])
    assert summary["budget_pauses"] == 1 and summary["kills"] == 1
    assert 0 < Decimal(summary["batch_usd"]) <= Decimal(summary["spent_usd"]) / 2
    assert len(per_key) == summary["calls_planned"] == 208
    assert 0 < summary["calls_reused"] <= summary["calls_planned"]
    assert summary["journal_answers"] >= summary["calls_reused"]
    spent, billed = Decimal(summary["spent_usd"]), Decimal(summary["billed_usd"])
    verdict = summary["verdict"]
    assert verdict.startswith("the ledger covers the provider's bill"), verdict
    if spent > billed:
        unconfirmed = summary["calls_unconfirmed"]
        calls = "call" if unconfirmed == 1 else "calls"
        assert f"the {unconfirmed} {calls} in flight at the kill" in verdict
        assert f"${spent - billed:.6f} higher" in verdict
    else:
        assert verdict.endswith("exactly: $" + f"{billed:.6f}")
    lines = (tmp_path / "questions.jsonl").read_text().splitlines()
    assert len(lines) == summary["questions"] > 0
    assert "SIGKILL" in proc.stderr and "budget reached" in proc.stderr


def test_verdict_says_whether_the_ledger_covers_the_bill_and_why():
    d = Decimal
    exact = verdict(d("2"), d("2"), 0, d(0))
    assert exact == "the ledger covers the provider's bill exactly: $2.000000"
    higher = verdict(d("2.5"), d("2"), 3, d("0.5"))
    assert "covers" in higher and "$0.500000 higher because the 3 calls in flight" in higher
    assert "counted as spent at their worst case" in higher
    assert "does NOT cover" in verdict(d("1"), d("2"), 0, d(0))


def test_demo_help_says_how_long_it_takes():
    help_ = subprocess.run([sys.executable, "-m", "tether.cli.main", "demo", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, COLUMNS="200"))
    assert "a few seconds" in help_.stdout and "20 seconds" not in help_.stdout
