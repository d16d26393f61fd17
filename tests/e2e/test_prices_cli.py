"""``tether prices show`` and ``tether submit --dry-run`` in a subprocess on a real SQLite file."""

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tether(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tether.cli.main", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=env)


def test_prices_show_json_shape_and_override(tmp_path):
    shown = tether("prices", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["profile"] == "tether-default" and data["effective_date"]
    row = next(m for m in data["models"] if m["model"] == "gpt-4o-mini")
    assert set(row) >= {"provider", "model", "input_per_mtok", "output_per_mtok"}
    mine = tmp_path / "p.toml"
    mine.write_text('name = "acme"\neffective_date = "2026-11-01"\n[[models]]\n'
                    'provider = "openai"\nmodel = "gpt-4o-mini"\ninput_per_mtok = "9"\n'
                    'output_per_mtok = "9"\n')
    over = json.loads(tether("prices", "show", "--json", "--profile", str(mine)).stdout)
    assert over["profile"] == "acme"
    assert next(m for m in over["models"] if m["model"] == "gpt-4o-mini")["input_per_mtok"] == "9"
    table = tether("prices", "show")
    assert "claude-sonnet-4-5" in table.stdout and "effective 2025-11-01" in table.stdout


def test_submit_dry_run_prices_and_enqueues_nothing(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    payload = json.dumps({"text": "one two three four five " * 40, "output": "x.jsonl",
                          "questions_per_chunk": 2})
    ok = tether("submit", "qa_pipeline", "--app", "examples.pipeline:app", "--dry-run", "--json",
                "-p", payload, "--database-url", url)
    assert ok.returncode == 0, ok.stderr
    est = json.loads(ok.stdout)
    from examples.pipeline import chunk
    assert est["calls"] == 2 * len(chunk("one two three four five " * 40, 400))
    assert Decimal(est["cost_usd"]) > 0 and est["fits_budget"]
    over = tether("submit", "qa_pipeline", "--app", "examples.pipeline:app", "--dry-run",
                  "-p", payload, "--max-cost", "0.0000001", "--database-url", url)
    assert over.returncode == 1 and "EXCEEDS" in over.stdout
    assert not (tmp_path / "t.db").exists(), "a dry run creates no database either"


def test_dry_run_without_app_says_to_name_the_app(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    env = {k: v for k, v in os.environ.items() if k != "TETHER_APP"}
    r = tether("submit", "summarize", "--dry-run", "-p", "{}", "--database-url", url, env=env)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("(unknown_job_type)"), r.stderr
    assert "'summarize'" in lines[0] and "--app MODULE:APP" in lines[0]
    assert "TETHER_APP" in lines[0] and "registered: none" not in lines[0]
    known = tether("submit", "nope", "--dry-run", "--app", "examples.pipeline:app",
                   "--database-url", url)
    assert known.returncode == 2 and "registered: qa_pipeline" in known.stderr


def test_project_budget_command(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    assert tether("db", "migrate", "--database-url", url).returncode == 0
    set_ = tether("project", "budget", "research", "--max-cost", "12.50", "--json",
                  "--database-url", url)
    assert set_.returncode == 0, set_.stderr
    assert json.loads(set_.stdout)["limits"]["max_cost_usd"] == "12.50"
    shown = tether("project", "budget", "research", "--database-url", url)
    assert "of $12.50" in shown.stdout and "spent $0.000000" in shown.stdout
