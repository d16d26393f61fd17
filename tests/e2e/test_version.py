"""One version everywhere: ``tether.__version__`` is what the package metadata declares (from
pyproject.toml; test_wheel.py checks a built wheel), what ``tether --version`` prints, the
OpenAPI document's ``info.version`` and the MCP server's ``serverInfo.version``."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import tether
from tests.e2e.api_harness import migrate_database
from tests.e2e.clitools import popen

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", re.M)


def test_the_package_metadata_takes_the_version_from_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tether.__version__"}


def test_the_changelog_s_latest_release_is_this_version():
    releases = CHANGELOG_RELEASE.findall((ROOT / "CHANGELOG.md").read_text())
    assert releases and releases[0] == tether.__version__


def test_the_cli_prints_it():
    proc = popen("--version", db=None, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.strip() == f"tether {tether.__version__}"


def test_the_openapi_document_states_it():
    from tether import Tether
    from tether.api.server import create_app

    app = Tether("sqlite:///:memory:")
    try:
        assert create_app(app, dashboard=False).openapi()["info"]["version"] == tether.__version__
    finally:
        app.close()


def test_the_mcp_server_introduces_itself_with_it(tmp_path):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "version-test", "version": "1"}}}
    url = f"sqlite:///{tmp_path}/mcp.db"
    migrate_database(url)
    proc = popen("mcp", "--insecure-no-auth", db=url,
                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(json.dumps(init) + "\n", timeout=60)
    assert proc.returncode == 0, err
    info = json.loads(out.splitlines()[0])["result"]["serverInfo"]
    assert (info["name"], info["version"]) == ("tether", tether.__version__)
