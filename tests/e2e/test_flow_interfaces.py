"""Singleton and debounce through every interface: REST over real HTTP, MCP over stdio, the
CLI. Per-submit options on a type no app registers (the servers run without an app)."""

from __future__ import annotations

import anyio
import pytest
from tests.e2e.api_harness import migrate_database, run_server
from tests.e2e.clitools import run_main
from tests.e2e.mcp_harness import code, data, stdio

from tether import Tether


def test_rest_submit_answers_200_with_the_live_singleton_and_replaces_a_debounced(tmp_path):
    url = f"sqlite:///{tmp_path}/tether.db"
    with run_server(url, tmp_path, insecure=True) as srv, srv.client() as c:
        body = {"type": "sync", "payload": {"n": 1}, "singleton": True, "flow_key": "cust-1"}
        first = c.post("/api/v1/jobs", json=body)
        again = c.post("/api/v1/jobs", json={**body, "payload": {"n": 2}})
        assert first.status_code == 201 and again.status_code == 200, again.text
        assert again.json()["id"] == first.json()["id"]
        assert first.json()["flow_mode"] == "singleton" and first.json()["flow_key"] == "cust-1"
        deb = {"type": "reindex", "payload": {"v": 1}, "debounce_s": 60, "flow_key": "d"}
        one = c.post("/api/v1/jobs", json=deb).json()
        two = c.post("/api/v1/jobs", json={**deb, "payload": {"v": 2}})
        assert two.status_code == 200 and two.json()["id"] == one["id"]
        assert c.get(f"/api/v1/jobs/{one['id']}").json()["payload"] == {"v": 2}
        bad = c.post("/api/v1/jobs", json={"type": "x", "flow_key": "k"})
        assert bad.status_code == 422 and bad.json()["code"] == "invalid_argument", bad.text
        assert c.post("/api/v1/jobs", json={**deb, "debounce_s": 0}).status_code == 422
        listed = c.get("/api/v1/jobs", params={"type": "sync"}).json()["items"]
        assert [j["flow_key"] for j in listed] == ["cust-1"]


def test_mcp_submit_says_created_false_for_a_live_singleton(sqlite_url):
    async def session():
        async with stdio(sqlite_url) as client:
            args = {"type": "sync", "payload": {"n": 1}, "singleton": True, "flow_key": "k"}
            first = data(await client.call_tool("tether_submit_job", args))
            again = data(await client.call_tool("tether_submit_job",
                                                {**args, "payload": {"n": 2}}))
            assert first["created"] and not again["created"]
            assert again["job"]["id"] == first["job"]["id"]
            assert again["job"]["flow_mode"] == "singleton"
            shown = data(await client.call_tool("tether_get_job",
                                                {"job_id": first["job"]["id"]}))
            assert shown["flow_key"] == "k"
            refused = await client.call_tool("tether_submit_job", {
                "type": "sync", "debounce_s": -1, "flow_key": "k"})
            assert code(refused) == "validation_error"
    anyio.run(session)


@pytest.fixture
def db(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("TETHER_APP", raising=False)
    url = f"sqlite:///{tmp_path}/tether.db"
    migrate_database(url)
    return url


def test_cli_submit_notes_the_matched_job_and_status_shows_the_key(capsys, db):
    first = run_main(capsys, "submit", "reindex", "--payload", '{"v": 1}', "--debounce", "30",
                     "--flow-key", "doc-7", "-q", db=db)
    assert first.code == 0, first
    again = run_main(capsys, "submit", "reindex", "--payload", '{"v": 2}', "--debounce", "30",
                     "--flow-key", "doc-7", "-q", db=db)
    assert again.code == 0 and again.out.strip() == first.out.strip()
    assert "debounce key 'doc-7'" in again.err and "payload is now this one" in again.err
    status = run_main(capsys, "job", "status", first.out.strip(), db=db)
    assert "debounce" in status.out and "doc-7" in status.out
    app = Tether(db)
    try:
        assert app.get(int(first.out)).payload == {"v": 2}
    finally:
        app.close()
    single = run_main(capsys, "submit", "sync", "--singleton", "--json", db=db)
    assert '"flow_mode": "singleton"' in single.out and '"flow_key": ""' in single.out
