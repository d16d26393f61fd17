"""Fair dispatch and aging at claim time, on both backends (docs/flow-control.md): projects of
one priority are claimed round-robin by the jobs they hold, a new project's job does not wait
behind another's backlog, and a low-priority job under constant high-priority load is claimed
within the aging bound (injected clock, no sleeping)."""

from tether import JobState
from tether.store.base import Outcome
from tether.store.flow import PRIORITY_AGING_S


def register(app):
    @app.job("t", max_attempts=3)
    def t(ctx, payload):
        return payload


def claim(app, limit=1, fair=True):
    return [c.job.id for c in app.store.claim("w", queues=None, limit=limit, lease_ttl=600,
                                              start=True, fair=fair)]


def finish(app, job_id):
    app.store.finish(job_id, 1, Outcome(JobState.SUCCEEDED, result_json="{}"))


def test_projects_of_one_priority_are_claimed_round_robin(app):
    register(app)
    jobs = {p: [app.submit("t", {}, project=p).id for _ in range(n)]
            for p, n in (("a", 5), ("b", 3), ("c", 2))}
    a, b, c = jobs["a"], jobs["b"], jobs["c"]
    order = [job_id for _ in range(10) for job_id in claim(app)]
    assert order == [a[0], b[0], c[0], a[1], b[1], c[1], a[2], b[2], a[3], a[4]]


def test_one_batch_takes_each_projects_first_jobs_in_turn(app):
    register(app)
    a = [app.submit("t", {}, project="a").id for _ in range(6)]
    b = [app.submit("t", {}, project="b").id for _ in range(2)]
    assert set(claim(app, limit=4)) == {a[0], a[1], b[0], b[1]}


def test_a_new_projects_job_does_not_wait_behind_a_backlog(app):
    register(app)
    backlog = [app.submit("t", {}, project="a").id for _ in range(200)]
    assert claim(app, limit=2) == backlog[:2]
    newcomer = app.submit("t", {}, project="b").id
    assert claim(app) == [newcomer]
    assert claim(app, fair=False) == [backlog[2]]  # strict order: the backlog first


def test_priority_still_comes_first_across_projects(app):
    register(app)
    low = app.submit("t", {}, project="a", priority=1).id
    urgent = app.submit("t", {}, project="b", priority=0).id
    assert claim(app) == [urgent]
    assert claim(app) == [low]


def test_a_low_priority_job_is_claimed_within_the_aging_bound(app, clock):
    """Priority 3 against a constant load of priority 0 (one job submitted and one claimed
    every 10 s): its aged priority reaches 0 after (3 - 0) * PRIORITY_AGING_S seconds, and it
    is claimed then, ahead of the newer priority-0 jobs; strict order would starve it."""
    register(app)
    low = app.submit("t", {}, priority=3).id
    start, claimed_at, running = clock.time(), None, None
    while claimed_at is None and clock.time() - start < 10 * PRIORITY_AGING_S:
        app.submit("t", {}, priority=0)
        (got,) = claim(app)
        if running is not None:
            finish(app, running)
        running = got
        if got == low:
            claimed_at = clock.time() - start
        clock.advance(10)
    assert claimed_at == 3 * PRIORITY_AGING_S


def test_without_fair_dispatch_the_same_load_starves_it(app, clock):
    register(app)
    low = app.submit("t", {}, priority=3).id
    for _ in range(60):
        app.submit("t", {}, priority=0)
        assert claim(app, fair=False) != [low]
        clock.advance(10)


def test_with_more_projects_than_a_batch_the_least_served_go_first(app):
    """A claim of 4 among 12 projects takes one job from each of the 4 whose first jobs are
    oldest; the next claims go on to the projects that hold nothing yet, and only then back."""
    register(app)
    jobs = {p: [app.submit("t", {}, project=f"p{p:02}").id for _ in range(2)] for p in range(12)}
    firsts = [jobs[p][0] for p in range(12)]
    assert claim(app, limit=4) == firsts[:4]
    assert claim(app, limit=4) == firsts[4:8]
    assert claim(app, limit=4) == firsts[8:]
    assert claim(app, limit=4) == [jobs[p][1] for p in range(4)]
