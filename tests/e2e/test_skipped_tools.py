"""A test run says which tests it skipped for a missing Chromium or PgBouncer and which package
to install; in CI it fails them instead. A run of pytest in a subprocess over two stand-in
tests that need the tools, with ``tests/conftest.py``'s fixture, helper and summary hook."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.procs import CHILD_PYTHONPATH

TESTS = '''
import pytest
from tests.conftest import require_tool

@pytest.fixture(scope="module")
def bouncer():
    require_tool("pgbouncer", "no pgbouncer at /nowhere")

@pytest.mark.usefixtures("needs_chromium")
def test_in_a_browser():
    pass

def test_pooled_once(bouncer):
    pass

def test_pooled_twice(bouncer):
    pass
'''


def _pytest(tmp_path, *args: str, ci: bool) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import needs_chromium, pytest_terminal_summary  # noqa: F401\n")
    (tmp_path / "test_tools.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PYTHONPATH=CHILD_PYTHONPATH, TETHER_CHROMIUM=str(tmp_path / "no-chromium"),
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # no plugin but xdist's, when asked for
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), *args, str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [[], ["-p", "xdist.plugin", "-n", "2"]],
                         ids=["one-process", "xdist"])
def test_the_summary_names_each_missing_tool_and_its_package(tmp_path, args):
    run = _pytest(tmp_path, *args, ci=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 skipped" in run.stdout
    assert ("1 tests skipped without chromium: install it with `sudo apt-get install chromium`"
            in run.stdout), run.stdout
    assert ("2 tests skipped without pgbouncer: install it with `sudo apt-get install pgbouncer`"
            in run.stdout), run.stdout


def test_in_ci_a_missing_tool_fails_its_tests(tmp_path):
    run = _pytest(tmp_path, ci=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "3 errors" in run.stdout and "skipped" not in run.stdout, run.stdout
    assert "CI never skips the chromium tests" in run.stdout
    assert "CI never skips the pgbouncer tests" in run.stdout
