"""The CLI starts without the store, the facade or the server stack: a command imports them only
when it opens a store. Checked in a fresh interpreter (what a ``tether`` call pays), by the
modules loaded rather than by timing; bench/README.md has the timings."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.e2e.clitools import ROOT, cli_env

HEAVY = ("tether.app", "tether.facade", "tether.store", "tether.worker", "tether.api",
         "tether.mcp", "tether.dashboard", "tether.demo", "fastapi", "uvicorn", "starlette",
         "psycopg", "psycopg_pool", "mcp", "pydantic", "croniter")
COMMANDS = ("worker", "workers", "submit", "run", "job", "queue", "type", "limit", "project",
            "schedule", "spend", "serve", "mcp", "db", "prune", "prices", "demo", "token")


def loaded_after(code: str, database_url: str | None = None) -> dict:
    """Run ``code`` in a new interpreter; returns its stdout, stderr and the heavy modules
    (``HEAVY`` prefixes) it had loaded by the end."""
    script = (f"import sys, json, io, contextlib\nout = io.StringIO()\n"
              f"with contextlib.redirect_stdout(out):\n    {code}\n"
              f"print(json.dumps({{'out': out.getvalue(), 'heavy': sorted(m for m in sys.modules "
              f"if m.split('.')[0] in {HEAVY!r} or m.startswith({HEAVY!r}))}}))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=cli_env(database_url),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return {**json.loads(proc.stdout), "err": proc.stderr}


def test_importing_tether_loads_no_submodule_until_a_name_is_used():
    r = loaded_after("import tether; print(sorted(m for m in sys.modules "
                     "if m.startswith('tether')), tether.__version__)")
    assert r["out"].split("]")[0] == "['tether'", r
    r = loaded_after("import tether; print(tether.Tether.__module__, len(dir(tether)))")
    assert r["out"].startswith("tether.app ") and "tether.store" in r["heavy"]


def test_the_cli_imports_no_store_facade_or_server_to_parse_or_help():
    assert loaded_after("import tether.cli.main")["heavy"] == []
    for args in (["--version"], ["--help"], ["job", "status", "--help"], ["nosuch"]):
        r = loaded_after(f"from tether.cli.main import main; main({args!r})")
        assert r["heavy"] == [], (args, r["heavy"])


def test_root_help_lists_every_command():
    r = loaded_after("from tether.cli.main import main; main(['--help'])")
    listed = {line.strip("│ ").split()[0] for line in r["out"].splitlines()
              if line.startswith("│ ") and line.strip("│ ")[:1].isalpha()}
    assert set(COMMANDS) <= listed, sorted(set(COMMANDS) - listed)
    assert "warning" not in r["err"]


def test_a_read_on_sqlite_loads_neither_postgres_nor_the_worker_nor_the_server_stack(tmp_path):
    db = f"sqlite:///{tmp_path}/t.db"
    loaded_after("from tether.cli.main import main; main(['db', 'migrate'])", db)
    r = loaded_after("from tether.cli.main import main; main(['job', 'list'])", db)
    assert "no jobs" in r["out"]
    assert "tether.store.sqlite" in r["heavy"]
    assert not [m for m in r["heavy"] if m.startswith(
        ("tether.store.postgres", "psycopg", "tether.worker", "fastapi", "uvicorn", "mcp",
         "pydantic", "tether.api", "tether.mcp", "tether.dashboard", "croniter"))], r["heavy"]
