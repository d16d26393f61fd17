"""The README's quick start runs as written: ``examples/quickstart.py`` in a fresh directory."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tether.providers.simulated import read_bill

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.py"


def run_quickstart(cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    return subprocess.run([sys.executable, str(QUICKSTART)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_quickstart_runs_and_a_second_run_pays_nothing(tmp_path):
    first = run_quickstart(tmp_path)
    assert first.returncode == 0, first.stderr
    head, *summaries = first.stdout.splitlines()
    assert re.fullmatch(r"job 1 succeeded: 4 summaries, 4 calls, \$0\.\d{6} of \$2\.00", head)
    assert len(summaries) == 4 and all(s.startswith("- ") and len(s) > 4 for s in summaries)
    assert (tmp_path / "tether.db").exists()
    bill = read_bill(tmp_path / "quickstart-bill.jsonl")
    assert sorted(e.key for e in bill) == ["gen-0", "gen-1", "gen-2", "gen-3"]

    again = run_quickstart(tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout, "the same idempotency key returns the finished job"
    assert len(read_bill(tmp_path / "quickstart-bill.jsonl")) == 4


def test_the_readme_quick_start_is_the_file_that_runs():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    source = QUICKSTART.read_text()
    missing = [line for line in code.splitlines() if line.strip() not in source]
    assert not missing, f"README lines not in examples/quickstart.py: {missing}"
