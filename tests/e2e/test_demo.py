"""``tether demo`` end to end; its summary is checked against the simulated provider's bill."""

import json
import subprocess
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

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
    assert summary["calls_reused"] > 0
    assert len(per_key) == 208
    lines = (tmp_path / "questions.jsonl").read_text().splitlines()
    assert len(lines) == summary["questions"] > 0
    assert "SIGKILL" in proc.stderr and "budget reached" in proc.stderr
