"""The wheel, installed without extras into a clean venv, is a working tether on SQLite.

Built with ``pip wheel --no-deps`` from a copy of the checkout's sources (so nothing left in
``build/`` by an earlier build can slip into the wheel), installed with the venv's own pip from the
same index as the project's venv; run from a folder outside the checkout so nothing is picked up
from the source tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tether

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

OPTIONAL = ("psycopg", "psycopg_pool", "fastapi", "starlette", "uvicorn", "jinja2",
            "prometheus_client", "pydantic", "mcp", "httpx")


def _run(*args: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TETHER_DATABASE_URL", "TETHER_APP")}
    env.update(NO_COLOR="1", COLUMNS="200", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source, dist = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, source / name)
    proc = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, source,
                cwd=dist)
    assert proc.returncode == 0, proc.stderr
    [built] = dist.glob("tether-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("venv")
    made = _run(sys.executable, "-m", "venv", home / "v", cwd=home)
    assert made.returncode == 0, made.stderr
    installed = _run(home / "v" / "bin" / "python", "-m", "pip", "install", "-q", wheel,
                     cwd=home)
    assert installed.returncode == 0, installed.stderr
    return home / "v"


def test_the_wheel_ships_typing_marker_and_the_demo_and_lists_extras(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = zf.read(meta).decode()
    assert {"tether/py.typed", "tether/examples/pipeline.py",
            "tether/examples/sample_document.txt", "tether/dashboard/static/spend.js",
            "tether/dashboard/templates/spend.html",
            "tether/dashboard/static/vendor/uplot/uPlot.iife.min.js",
            "tether/dashboard/static/vendor/uplot/uPlot.min.css",
            "tether/dashboard/static/vendor/uplot/LICENSE"} <= names
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines()
                if line.startswith("Requires-Dist:")]
    base = sorted(r.split(">")[0].split("<")[0] for r in requires if "extra ==" not in r)
    assert base == ["click", "croniter", "rich", "typer", "tzdata"]
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines()
              if line.startswith("Provides-Extra:")}
    assert {"postgres", "server", "mcp", "otel", "pydantic-ai", "openai-agents", "all",
            "test"} <= extras
    version = next(line.split(":", 1)[1].strip() for line in metadata.splitlines()
                   if line.startswith("Version:"))
    assert version == tether.__version__ and wheel.name.startswith(f"tether-{version}-")


def test_base_install_has_no_optional_package_and_runs_the_demo(venv, tmp_path):
    python = venv / "bin" / "python"
    found = _run(python, "-c", "import importlib.util as u, sys; "
                 f"print([m for m in {OPTIONAL!r} if u.find_spec(m)])", cwd=tmp_path)
    assert found.stdout.strip() == "[]", found
    demo = _run(venv / "bin" / "tether", "demo", "--dir", tmp_path / "demo", "--json",
                cwd=tmp_path, timeout=120)
    assert demo.returncode == 0, demo.stderr
    summary = json.loads(demo.stdout)
    assert summary["state"] == "succeeded"
    assert summary["kills"] == 1 and summary["budget_pauses"] == 1
    assert summary["calls_planned"] == 208 and summary["questions"] > 0
    assert summary["verdict"].startswith("the ledger covers the provider's bill")
    assert summary["database_url"].startswith("sqlite:///")
    assert not (tmp_path / "examples").exists()
    spend = _run(venv / "bin" / "tether", "--database-url", summary["database_url"], "spend",
                 "--by", "model", "--json", cwd=tmp_path)
    assert spend.returncode == 0, spend.stderr
    report = json.loads(spend.stdout)
    assert [r["model"] for r in report["rows"]] and report["total"]["calls"] > 0


@pytest.mark.parametrize("args, what, extra", [
    (["serve"], "the REST API", "server"),
    (["mcp"], "the MCP server", "mcp"),
    (["--database-url", "postgresql://127.0.0.1:5432/test", "job", "list"],
     "a postgresql:// database URL", "postgres"),
])
def test_base_install_names_the_missing_extra(venv, tmp_path, args, what, extra):
    proc = _run(venv / "bin" / "tether", *args, cwd=tmp_path, timeout=60)
    assert proc.returncode == 1, proc
    assert proc.stderr.strip() == (f"error: {what} needs the '{extra}' extra: "
                                   f"pip install 'tether[{extra}]' (missing_extra)")
