"""examples/map_reduce.py under fire: worker processes SIGKILLed every 0.7 s while a parent
gathers 24 child jobs, on every backend. Every child is done once, the parent is woken
exactly once for its gather, no journaled call is paid twice, the whole tree's spend stays
within the parent's budget, and no waiting job ever holds a lease."""

from __future__ import annotations

import random
import time
from decimal import Decimal

import pytest

from tether import JobState, Tether
from tether.providers.simulated import read_bill
from tether.testing.invariants import describe, failed, run_checks
from tests.reliability.helpers import Supervisor, url_for

pytestmark = pytest.mark.slow

LIMIT = Decimal("0.50")
DOCS = 24


def test_map_reduce_survives_sigkills(backend, tmp_path):
    from examples.map_reduce import app as example, documents

    url = url_for(backend, tmp_path)
    bill = tmp_path / "bill.jsonl"
    client = Tether(url)
    client.registry = example.registry
    parent = client.submit("report", {"documents": documents(DOCS)}, project="docs",
                           idempotency_key="mr-1", budget={"max_cost_usd": str(LIMIT)})
    sup = Supervisor(url, tmp_path, 2, app="examples.map_reduce:app", concurrency=4,
                     lease_ttl=2.0, env={"TETHER_BILL": str(bill), "TETHER_SIM_LATENCY": "0.3"})
    rng = random.Random(7)
    kills = 0
    leased_waiters: list[str] = []
    waiting_seen = 0
    try:
        deadline = time.monotonic() + 150
        next_kill = time.monotonic() + 0.7
        while client.get(parent.id).state not in (JobState.SUCCEEDED, JobState.FAILED):
            assert time.monotonic() < deadline, "the map-reduce did not finish in time"
            sup.tend()
            for j in client.store.list_jobs(state="waiting", limit=100):
                waiting_seen += 1
                if j.lease_attempt is not None or j.lease_owner is not None:
                    leased_waiters.append(f"job {j.id} waits holding {j.lease_owner}")
            if time.monotonic() >= next_kill and kills < 12:
                victim = rng.choice(sup.procs)
                if victim.poll() is None:
                    victim.kill()
                    kills += 1
                next_kill = time.monotonic() + 0.7
            time.sleep(0.05)
    finally:
        sup.stop()

    done = client.get(parent.id)
    assert done.state == JobState.SUCCEEDED, (done.error_code, done.error_summary)
    assert done.result["documents"] == DOCS
    assert kills >= 3, f"only {kills} kills landed; the run was too short to test anything"
    assert waiting_seen > 0, "the parent was never seen waiting"
    assert leased_waiters == []

    children = [j for j in client.list(limit=100) if j.parent_id == parent.id]
    assert len(children) == DOCS and all(c.state == JobState.SUCCEEDED for c in children)
    assert sorted(c.result["doc"] for c in children) == [d["name"] for d in documents(DOCS)]

    kinds = [e.kind for e in client.events(parent.id, limit=10_000)]
    (gather,) = client.waits(parent.id)
    assert gather.kind == "children" and gather.done and len(gather.children) == DOCS
    assert kinds.count("woken") + kinds.count("wait_satisfied") == 1, kinds

    checks = run_checks(client, expected_ids=[parent.id, *(c.id for c in children)],
                        bill_path=bill)
    assert not failed(checks), describe(checks)
    billed = sum((b.cost_usd for b in read_bill(bill)), Decimal(0))
    assert billed <= LIMIT and done.budget.used.spent_usd <= LIMIT
    tree_ledger = sum((r.cost_usd for j in [done, *children] for r in client.ledger(j.id)),
                      Decimal(0))
    assert done.budget.used.spent_usd == tree_ledger, "the parent's spend counts its children's"
    client.close()
