"""The base install (library, worker, CLI, SQLite) needs no optional package, and a feature whose
extra is missing fails with one ``missing_extra`` error naming the extra to install.

Each check runs in a fresh interpreter where the optional packages cannot be imported (a
``None`` entry in ``sys.modules`` makes ``import`` raise ``ModuleNotFoundError``, exactly as
when the package is absent); the wheel test in ``tests/e2e/test_wheel.py`` checks the same
against a real install without extras.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.errors import ERROR_CODES, MissingExtra, TetherError
from tether.optional import PROVIDES, load

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = sorted(set().union(*PROVIDES.values()) | {"mcp", "opentelemetry", "httpx"})
BLOCK = f"import sys\nfor m in {OPTIONAL!r}: sys.modules[m] = None\n"


def _python(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # this checkout, whatever is installed
    return subprocess.run([sys.executable, "-c", BLOCK + code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return _python("from tether.cli.main import main\nsys.exit(main(sys.argv[1:]))", *args,
                   cwd=cwd)


def test_core_worker_and_cli_import_no_optional_package(tmp_path):
    proc = _python(
        "import tether, tether.worker, tether.worker.__main__, tether.cli.main, tether.demo\n"
        "from tether.store.open import open_store\n"
        "from tether import Tether\n"
        "app = Tether('sqlite:///' + sys.argv[1])\n"
        "@app.job('hello')\n"
        "def hello(ctx, payload):\n"
        "    return {'hi': payload['name']}\n"
        "print(app.run('hello', {'name': 'x'}, timeout=30).state.value)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in " + repr(OPTIONAL)
        + " and sys.modules[m] is not None)\n"
        "print(loaded)\n", str(tmp_path / "t.db"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"
    assert "succeeded" in proc.stdout


@pytest.mark.parametrize("args, what, extra", [
    (["serve"], "the REST API", "server"),
    (["mcp"], "the MCP server", "mcp"),
    (["--database-url", "postgresql://127.0.0.1:5432/test", "job", "list"],
     "a postgresql:// database URL", "postgres"),
])
def test_a_missing_extra_is_one_error_naming_it(tmp_path, args, what, extra):
    proc = _cli(*args, cwd=tmp_path)
    assert proc.returncode == 1, proc
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"error: {what} needs the '{extra}' extra: "
                     f"pip install 'tether[{extra}]' (missing_extra)"], proc.stderr


@pytest.mark.parametrize("module, what, extra", [
    ("tether.api", "the REST API", "server"),
    ("tether.mcp", "the MCP server", "mcp"),
])
def test_python_dash_m_names_the_missing_extra(tmp_path, module, what, extra):
    proc = _python(f"import runpy\nsys.argv = ['{module}']\n"
                   f"runpy.run_module('{module}', run_name='__main__', alter_sys=True)\n",
                   cwd=tmp_path)
    assert proc.returncode == 1, proc
    assert proc.stderr.strip().splitlines() == [
        f"error: {what} needs the '{extra}' extra: pip install 'tether[{extra}]' "
        "(missing_extra)"], proc.stderr


def test_open_store_names_the_postgres_extra(tmp_path):
    proc = _python("from tether.store.open import open_store\n"
                   "from tether.errors import MissingExtra\n"
                   "try:\n"
                   "    open_store('postgres://127.0.0.1:5432/test')\n"
                   "except MissingExtra as exc:\n"
                   "    print(exc.code, exc.extra, exc.details['module'])\n", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["missing_extra", "postgres", "psycopg"]


def test_missing_extra_is_a_tether_error_with_a_stable_code():
    exc = MissingExtra("the REST API", "server")
    assert isinstance(exc, TetherError) and exc.code == "missing_extra"
    assert ERROR_CODES["missing_extra"] is MissingExtra
    assert exc.message == "the REST API needs the 'server' extra: pip install 'tether[server]'"


def test_a_module_missing_for_another_reason_is_not_called_a_missing_extra():
    with pytest.raises(ModuleNotFoundError) as caught:
        load("tether.no_such_part", extra="server", what="nothing")
    assert not isinstance(caught.value, MissingExtra)
    assert load("tether.api.server", extra="server", what="the REST API").__name__ == \
        "tether.api.server"


@pytest.mark.parametrize("module, extra", [
    ("tether.integrations.pydantic_ai", "pydantic-ai"),
    ("tether.integrations.openai_agents", "openai-agents"),
])
def test_an_agent_integration_names_its_extra(tmp_path, module, extra):
    proc = _python("from tether.errors import MissingExtra\n"
                   "try:\n"
                   f"    import {module}\n"
                   "except MissingExtra as exc:\n"
                   "    print(exc.code, exc.extra)\n", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["missing_extra", extra]
