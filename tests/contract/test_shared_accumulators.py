"""Shared accumulators (a project's, a parent's) under concurrent calls of many jobs.

Calls of different jobs in one project run at once on PostgreSQL. They must add up exactly
(no lost update), and a project without limits must not make them queue on its row; a project
with limits must: its check is only sound against the row's current value.
"""

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
import threading
import uuid

import psycopg
import pytest

from tether import Budget, BudgetExhausted, Usage
from tether.core.budget import Reservation
from tether.store.base import CallReserve, CallSettle

from tests.money import PRICE, reserve, running_job
from tests.procs import wait_until


def _calls(app, job, attempt, n):
    for i in range(n):
        key = f"k{i}"
        ((_, err),) = app.store.account(job.id, attempt, [CallReserve(
            key, "s", "simulated", "sim-small", _reservation())])
        assert err is None
        ((_, err),) = app.store.account(job.id, attempt, [CallSettle(
            key, Usage(60, 40), PRICE, "p@1", '{"text": "ok"}', False)])
        assert err is None


def _reservation():
    return Reservation(Decimal("0.10"), 100, 50)


def test_concurrent_calls_of_many_jobs_add_up_in_their_project(app):
    jobs = [running_job(app, project="shared") for _ in range(6)]
    with ThreadPoolExecutor(6) as pool:
        for f in [pool.submit(_calls, app, job, tok, 15) for job, tok in jobs]:
            f.result()
    used = app.project_budget("shared").used
    per_job = [app.get(job.id).budget.used for job, _ in jobs]
    assert used.calls == 90 == sum(u.calls for u in per_job)
    assert used.reserved_calls == 0 and used.reserved_usd == 0
    assert used.spent_usd == sum((u.spent_usd for u in per_job), Decimal(0))
    assert used.spent_usd == sum((row.cost_usd for job, _ in jobs for row in app.ledger(job.id)),
                                 Decimal(0))
    assert used.input_tokens == 90 * 60 and used.output_tokens == 90 * 40


def test_concurrent_children_add_up_in_their_parent(app):
    if "t" not in app.registry:
        app.register("t", lambda ctx, payload: payload)
    parent, _ = running_job(app)
    children = [app.submit_with_status("t", {}, idempotency_key=f"child:{i}",
                                       parent_id=parent.id)[0] for i in range(4)]
    leases = {c.job.id: c.attempt for c in app.store.claim("w", queues=None, limit=10,
                                                         lease_ttl=30)}
    for child in children:
        app.store.start(child.id, leases[child.id])
    with ThreadPoolExecutor(4) as pool:
        for f in [pool.submit(_calls, app, child, leases[child.id], 10) for child in children]:
            f.result()
    assert app.get(parent.id).budget.used.calls == 40


def _holder(pg_url_of_app, project, spent):
    """A transaction elsewhere that locks the project's accumulator and adds ``spent``."""
    conn = psycopg.connect(pg_url_of_app, autocommit=False)
    conn.execute("SELECT 1 FROM budgets WHERE scope = 'project' AND key = %s FOR UPDATE",
                 (project,))
    conn.execute("UPDATE budgets SET spent_usd = spent_usd + %s WHERE scope = 'project' "
                 "AND key = %s", (spent, project))
    return conn


def _named(url: str) -> tuple[str, str]:
    """``url`` with an application name of its own, and the name: the shared server runs other
    tests (and other test processes) whose statements may wait on locks too."""
    name = f"tether-test-{uuid.uuid4().hex[:8]}"
    return f"{url}&application_name={name}", name


def _waiting_on_lock(url, name) -> str | None:
    """The statement of a backend named ``name`` waiting on a row lock, if one is."""
    with psycopg.connect(url, autocommit=True) as c:
        row = c.execute(
            "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND application_name = %s", (name,)).fetchone()
        return row[0] if row else None


@pytest.mark.postgres
def test_a_project_without_limits_is_locked_only_by_its_final_addition(pg_url, clock):
    """The call does its reads and journal writes without waiting for the project's row; it
    waits only at the addition, the batch's last write before COMMIT."""
    from tether import Tether
    url, name = _named(pg_url)
    app = Tether(database_url=url, clock=clock)
    job, tok = running_job(app, project="free")
    reserve(app, job, tok, "first")
    holder = _holder(pg_url, "free", Decimal("5"))
    t = threading.Thread(target=reserve, args=(app, job, tok, "second"))
    try:
        t.start()
        waiting = wait_until(lambda: _waiting_on_lock(pg_url, name), timeout=10,
                             what="the reservation to reach the project's row")
        assert "spent_usd = spent_usd +" in str(waiting) and "FOR UPDATE" not in str(waiting)
    finally:
        holder.commit()
        holder.close()
    t.join(10)
    used = app.project_budget("free").used
    assert used.reserved_calls == 2 and used.spent_usd == Decimal("5")
    app.close()


@pytest.mark.postgres
def test_a_project_with_limits_checks_its_calls_against_the_current_row(pg_url, clock):
    from tether import Tether
    url, name = _named(pg_url)
    app = Tether(database_url=url, clock=clock)
    app.set_project_budget("capped", Budget(max_cost_usd=Decimal("1.00")))
    job, tok = running_job(app, project="capped")
    reserve(app, job, tok, "first")
    holder = _holder(pg_url, "capped", Decimal("0.85"))
    outcome: list[object] = []
    t = threading.Thread(target=lambda: outcome.append(_try_reserve(app, job, tok)))
    try:
        t.start()
        waiting = wait_until(lambda: _waiting_on_lock(pg_url, name), timeout=10,
                             what="the reservation to wait for the project's row")
        assert "FOR UPDATE" in str(waiting) and not outcome
    finally:
        holder.commit()
        holder.close()
    t.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], BudgetExhausted)
    assert outcome[0].details["scope"] == "project"
    app.close()


def _try_reserve(app, job, tok):
    try:
        return reserve(app, job, tok, "second")
    except BudgetExhausted as exc:
        return exc



def test_the_addition_and_the_locked_read_agree_on_every_backend(app):
    """``add_budget_row`` and ``lock_budget_keys`` exist on both backends (PostgreSQL uses
    them for concurrent writers); each adds and reads exactly."""
    job, tok = running_job(app, project="sums")
    reserve(app, job, tok, "a", cost="0.10")
    store = app.store
    delta = {"spent_usd": store._money_param(Decimal("0.000001")),
             "reserved_usd": store._money_param(Decimal("-0.10")), "calls": 1,
             "reserved_calls": -1, "input_tokens": 7, "output_tokens": 3,
             "reserved_input_tokens": -100, "reserved_output_tokens": -50, "examples": 0}
    with store._write() as tx:
        tx.many("add_budget_row", [dict(delta, scope="project", key="sums", now=clock_now(app))])
        (row,) = tx.all("lock_budget_keys", scopes=store._list_param(["project"]),
                        keys=store._list_param(["sums"]))
    assert Decimal(str(row["spent_usd"])) == Decimal("0.000001")
    assert Decimal(str(row["reserved_usd"])) == 0 and row["reserved_calls"] == 0
    used = app.project_budget("sums").used
    assert used.calls == 1 and used.input_tokens == 7 and used.reserved_input_tokens == 0


def clock_now(app):
    return app.clock.time()
