"""Every script in examples/ runs to completion on a fresh SQLite file in an empty directory,
and whatever it leaves there is ignored by git."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs import CHILD_PYTHONPATH

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_the_example_runs_and_leaves_only_ignored_files(example, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env["PYTHONPATH"] = CHILD_PYTHONPATH
    run = subprocess.run([sys.executable, str(example)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    if not left:
        return
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *left], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert sorted(ignored) == left, "left behind and not in .gitignore"
