"""Job types and concurrency limits over MCP (SDK client over stdio, both backends): an admin
pauses a type and sets a limit that claims obey and the usage shows; a project token may not."""

from __future__ import annotations

import anyio

from tether import Tether
from tests.e2e.mcp_harness import code, data, stdio


def test_an_admin_pauses_a_type_and_sets_a_limit(database_url):
    local = Tether(database_url)

    @local.job("summarize")
    def summarize(ctx, payload):
        return payload

    for customer in ("c1", "c1", "c2"):
        local.submit("summarize", {"customer": customer})
    _, admin = local.store.create_token(name="ops", projects=[], admin=True)
    _, mine = local.store.create_token(name="mine", projects=["default"], admin=False)

    async def session():
        async with stdio(database_url, mine) as client:
            for tool, arguments in (("tether_list_types", {}), ("tether_list_limits", {}),
                                    ("tether_pause_type", {"name": "summarize"}),
                                    ("tether_set_limit", {"scope": "type", "name": "x",
                                                          "total": 1})):
                assert code(await client.call_tool(tool, arguments)) == "forbidden", tool
        async with stdio(database_url, admin) as client:
            paused = data(await client.call_tool("tether_pause_type", {"name": "summarize"}))
            assert paused == {"name": "summarize", "paused": True, "counts": {"queued": 3}}
            assert local.store.claim("w", queues=None, limit=9, lease_ttl=30) == []
            types = data(await client.call_tool("tether_list_types", {}))["items"]
            assert types == [paused]
            assert data(await client.call_tool("tether_resume_type",
                                               {"name": "summarize"}))["paused"] is False
            unknown = await client.call_tool("tether_pause_type", {"name": "nope"})
            assert code(unknown) == "unknown_job_type"
            limit = data(await client.call_tool("tether_set_limit", {
                "scope": "type", "name": "summarize", "per_key": 1, "key": "customer"}))
            assert limit == {"scope": "type", "name": "summarize", "key": "customer",
                             "per_key": 1, "total": None}
            claimed = local.store.claim("w", queues=None, limit=9, lease_ttl=30)
            assert sorted(c.job.payload["customer"] for c in claimed) == ["c1", "c2"]
            usage = data(await client.call_tool("tether_list_limits", {}))["usage"]
            assert [(u["key"], u["running"], u["limit"]) for u in usage] == [
                (None, 2, None), ("c1", 1, 1), ("c2", 1, 1)]
            bad = await client.call_tool("tether_set_limit", {"scope": "type", "name": "x"})
            assert code(bad) == "invalid_argument"
            cleared = await client.call_tool("tether_clear_limit", {"scope": "type",
                                                                    "name": "summarize"})
            assert data(cleared) == {"cleared": True}

    try:
        anyio.run(session)
    finally:
        local.close()
