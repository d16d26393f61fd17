"""Every shape of job-list filter (none, a state, one project and a state, a search) returns
the same jobs on every backend, newest first, pages by ``before_id``, and is planned on an
index: a full scan of a table of millions of finished jobs is what bench W10 caught."""

import pytest

from tether import JobState
from tether.errors import InvalidArgument


@pytest.fixture
def jobs(app):
    app.register("t", lambda ctx, payload: None)
    made = []
    for i in range(12):
        job = app.submit("t", project=f"p{i % 3}", idempotency_key=f"key-{i}")
        made.append(job)
    for job in made[::4]:
        app.cancel(job.id)
    return made


def _ids(jobs):
    return [j.id for j in jobs]


def test_each_filter_returns_the_matching_jobs_newest_first(app, jobs):
    newest_first = sorted(jobs, key=lambda j: -j.id)
    cancelled = [j.id for j in newest_first if j.id in {x.id for x in jobs[::4]}]
    assert _ids(app.list()) == _ids(newest_first)
    assert _ids(app.list(state="cancelled")) == cancelled
    assert app.list(state="failed") == []
    assert _ids(app.list(project="p0", state="cancelled")) == [
        j.id for j in newest_first if j.project == "p0" and j.id in cancelled]
    assert _ids(app.list(projects={"p0", "p1"}, state="queued")) == [
        j.id for j in newest_first if j.project in ("p0", "p1") and j.id not in cancelled]
    assert _ids(app.list(state="queued", before_id=jobs[6].id, limit=2)) == [
        jobs[5].id, jobs[3].id]


def test_one_projects_jobs_in_a_state_queued_or_not(app, jobs):
    """PostgreSQL lists a project's queued jobs from other indexes than its other states
    (jobs_project_state holds no queued job): the same jobs, newest first, paged alike."""
    for _ in range(2):  # p2 has queued, cancelled and running jobs
        app.submit("t", project="p2", queue="now")
    claimed = app.store.claim("w", queues=["now"], limit=2, lease_ttl=30, start=True)
    assert {c.job.project for c in claimed} == {"p2"}
    for state in ("queued", "cancelled", "running"):
        want = [j.id for j in sorted(app.list(limit=100), key=lambda j: -j.id)
                if j.project == "p2" and j.state == state]
        assert want and _ids(app.list(project="p2", state=state)) == want, state
        assert _ids(app.list(project="p2", state=state, before_id=want[0], limit=1)) == want[1:2]
    assert app.list(project="p9", state="queued") == []


def test_a_search_finds_a_job_by_id_or_by_key_in_its_scope(app, jobs):
    target = jobs[7]
    assert _ids(app.list(search=str(target.id))) == [target.id]
    assert _ids(app.list(search="key-7")) == [target.id]
    assert _ids(app.list(search="key-7", project="p1")) == [target.id]
    assert app.list(search="key-7", project="p0") == []
    assert app.list(search="key-7", state="cancelled") == []
    assert app.list(search=f"0{target.id}") == []  # an id spelled exactly, as before
    assert app.list(search="99999999999999999999") == []  # not an id: no overflow
    assert app.list(search="no-such-key") == []
    assert app.get(target.id).state == JobState.QUEUED


def test_the_list_statements_are_planned_on_their_indexes(store, backend, jobs):
    """SQLite (never ANALYZEd) is told which index each statement reads, and its plan names
    it; PostgreSQL picks by its statistics, so what it needs is that they know how project
    and state go together (W10 measures the plans at 10 M jobs)."""
    if backend == "postgres":
        with store._read() as tx:
            row = tx.conn.execute(
                "SELECT stxkind FROM pg_statistic_ext WHERE stxname = 'jobs_project_state_mcv' "
                "AND stxnamespace = current_schema()::regnamespace").fetchone()
        assert row is not None and "m" in row["stxkind"]
        return
    from tether.store.sqlite.tx import BOUND
    expect = {"list_jobs_in_state": ("jobs_state", {"state": "failed"}),
              "list_jobs_in_project_state": ("jobs_project_state",
                                             {"state": "failed", "project": "p1"}),
              "list_jobs_search": ("jobs_idempotency", {"search": "k", "search_id": 5})}
    base = {"projects": None, "type": None, "queue": None, "before_id": None, "limit": 51,
            "state": None, "project": None, "search": None, "search_id": None}
    conn = store._conn()
    for name, (index, params) in expect.items():
        sql, bind = BOUND[name]
        plan = " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql,
                                                         bind({**base, **params})))
        assert index in plan and "SCAN j " not in plan + " ", (name, plan)


@pytest.mark.parametrize("read, argument", [
    (lambda app, job: app.list(limit=-1), "limit"),
    (lambda app, job: app.list(limit=2**63), "limit"),
    (lambda app, job: app.list(before_id=-5), "before_id"),
    (lambda app, job: app.list(before_id=2**64), "before_id"),
    (lambda app, job: app.list_waiting(limit=-1), "limit"),
    (lambda app, job: app.events(job.id, limit=-1), "limit"),
    (lambda app, job: app.events(job.id, limit=2**64), "limit"),
    (lambda app, job: app.events(job.id, limit=True), "limit"),
])
def test_a_page_no_store_can_hold_is_refused_alike(app, jobs, read, argument):
    """SQLite read ``LIMIT -1`` as every row and PostgreSQL refused it; a bound past 64 bits
    raised OverflowError on one and a store error on the other."""
    with pytest.raises(InvalidArgument) as info:
        read(app, jobs[0])
    assert info.value.details["argument"] == argument


def test_the_widest_pages_are_read(app, jobs):
    assert len(app.list(limit=2**63 - 1, before_id=2**63 - 1)) == len(jobs)
    assert app.list(limit=0) == [] and app.list(before_id=0) == []
    assert len(app.events(jobs[1].id, limit=2**63 - 1)) == 1
