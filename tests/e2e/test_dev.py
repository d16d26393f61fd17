"""``./dev`` installs what each command needs: the demo the base package alone, the tests and
the linter the test toolchain; each set once, again only after ``pyproject.toml`` changes.

The real script runs in a copy of the checkout's ``dev`` and ``pyproject.toml`` whose ``.venv``
holds stand-ins for ``python``, ``tether``, ``ruff`` and ``mypy`` that only record how they were
called, so what the script asks pip for is read without installing anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _checkout(tmp_path: Path) -> Path:
    for name in ("dev", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "tether", "ruff", "mypy"):
        stub = bin_dir / tool
        stub.write_text(f'#!/bin/sh\necho "{tool} $*" >> "$(dirname "$0")/../calls"\n')
        stub.chmod(0o755)
    return tmp_path


def _dev(checkout: Path, *args: str) -> list[str]:
    """Run ``./dev ARGS``; the calls it made, one line each."""
    calls = checkout / ".venv" / "calls"
    calls.write_text("")
    proc = subprocess.run(["bash", str(checkout / "dev"), *args], cwd=checkout,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return calls.read_text().splitlines()


def test_demo_installs_the_base_package_and_test_installs_the_toolchain(tmp_path):
    checkout = _checkout(tmp_path)
    assert _dev(checkout, "demo", "--json") == [
        "python -m pip install -q -e .", "tether demo --json"]
    assert _dev(checkout, "demo") == ["tether demo"]
    assert _dev(checkout, "test", "-q") == [
        "python -m pip install -q -e .[test]",
        "python -m pytest -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder -q"]
    assert _dev(checkout, "demo") == ["tether demo"], "the test set includes the base"
    assert _dev(checkout, "lint")[0] == "ruff check src"


def test_a_changed_pyproject_installs_again(tmp_path):
    checkout = _checkout(tmp_path)
    _dev(checkout, "lint")
    _dev(checkout, "demo")
    later = (checkout / ".venv" / ".tether-installed-test").stat().st_mtime + 10
    os.utime(checkout / "pyproject.toml", (later, later))
    assert _dev(checkout, "demo")[0] == "python -m pip install -q -e ."
    assert _dev(checkout, "lint")[0] == "python -m pip install -q -e .[test]"
