"""Job type versions: stored with each job at submit, and claimed only by workers whose code
serves that version; a job no live worker serves at its version is reported unserved. Both
backends, the injected clock, no sleeps."""

import pytest

from tether import JobState, Tether
from tether.core.webhooks import DELIVERY_TYPE
from tether.errors import ConfigurationError

S = JobState


def deploy(database_url, clock, version, replays=None):
    """An app on the test database whose type ``t`` is at ``version``."""
    app = Tether(database_url, clock=clock)

    @app.job("t", version=version, replays=replays)
    def t(ctx, payload):
        return version

    return app


@pytest.fixture
def deploys(app, database_url, clock):
    made = []

    def make(version, replays=None):
        made.append(deploy(database_url, clock, version, replays))
        return made[-1]

    app.store.migrate()
    yield make
    for other in made:
        other.close()


def test_the_version_is_stored_with_each_job_and_shown(deploys, app):
    v1, v2 = deploys("1"), deploys("2")
    a, b = v1.submit("t", {}), v2.submit("t", {})
    assert (a.version, b.version) == ("1", "2")
    assert (app.get(a.id).version, app.get(b.id).version) == ("1", "2")
    (c,) = v2.submit_many([{"type": "t"}])
    assert app.get(c.id).version == "2" and app.submit("t", {}).version == ""
    assert app.list(type="t")[0].to_dict()["version"] == ""


def test_a_version_is_checked_at_registration(app):
    for bad in ("a@b", "x" * 65, 2, "tab\there"):
        with pytest.raises(ConfigurationError):
            app.register("bad", lambda ctx, p: None, version=bad)
    with pytest.raises(ConfigurationError):
        app.register("bad", lambda ctx, p: None, replays="some")


def test_a_worker_claims_only_the_versions_its_code_serves(deploys, app):
    v1, v2 = deploys("1"), deploys("2")
    old = [v1.submit("t", {}), v1.submit("t", {})]
    new = [v2.submit("t", {}), v2.submit("t", {})]
    w2 = v2.worker(concurrency=1, schedule_interval=None, group_commit=False)
    w2.run(install_signals=False, stop_when_idle=True)
    assert [app.get(j.id).result for j in new] == ["2", "2"]
    assert [app.get(j.id).state for j in old] == [S.QUEUED, S.QUEUED]
    w1 = v1.worker(concurrency=1, schedule_interval=None, group_commit=False)
    w1.run(install_signals=False, stop_when_idle=True)
    assert [app.get(j.id).result for j in old] == ["1", "1"]
    assert {w.id: w.versions for w in app.workers(include_stopped=True)} == {
        w1.id: {"t": ["1"], DELIVERY_TYPE: [""]}, w2.id: {"t": ["2"], DELIVERY_TYPE: [""]}}


def test_a_store_claim_matches_type_at_version_keys(deploys, app):
    v1, v2 = deploys("1"), deploys("2")
    a, b, c = v1.submit("t", {}), v2.submit("t", {}), app.submit("t", {})
    claim = app.store.claim
    assert [x.job.id for x in claim("w", queues=None, types=[], versions=["t@2"], limit=9,
                                    lease_ttl=30)] == [b.id]
    assert [x.job.id for x in claim("w", queues=None, types=[], versions=["t@"], limit=9,
                                    lease_ttl=30)] == [c.id]
    assert claim("w", queues=None, types=[], versions=["t@3", "u@1"], limit=9,
                 lease_ttl=30) == []
    assert [x.job.id for x in claim("w", queues=None, types=["t"], limit=9,
                                    lease_ttl=30)] == [a.id]


def test_replays_any_or_listed_claims_those_versions_too(deploys, app):
    v1 = deploys("1")
    jobs = [v1.submit("t", {}), app.submit("t", {}), deploys("3").submit("t", {})]
    listed = deploys("2", replays=["1"])
    listed.worker(concurrency=1, schedule_interval=None,
                  group_commit=False).run(install_signals=False, stop_when_idle=True)
    assert [app.get(j.id).result for j in jobs] == ["2", None, None]
    every = deploys("4", replays="any")
    w = every.worker(concurrency=1, schedule_interval=None, group_commit=False)
    w.run(install_signals=False, stop_when_idle=True)
    assert [app.get(j.id).result for j in jobs] == ["2", "4", "4"]
    assert {x.id: x.versions for x in app.workers(include_stopped=True)}[w.id] == {
        DELIVERY_TYPE: [""]}


def test_a_job_whose_version_no_live_worker_serves_is_unserved(deploys, app):
    v1, v2 = deploys("1"), deploys("2")
    a, b = v1.submit("t", {}), v2.submit("t", {})
    w2 = v2.worker(concurrency=1, schedule_interval=None, lease_ttl=30)
    w2._register()
    assert app.unserved([app.get(a.id), app.get(b.id)]) == {a.id}
    assert app.unserved_counts() == {("default", "t", "1"): 1}
    assert not app.serving().serves("t", "default", "1")
    assert app.serving().serves("t", "default", "2")
    deploys("5", replays="any").worker(concurrency=1, schedule_interval=None,
                                       lease_ttl=30)._register()
    assert app.unserved([app.get(a.id)]) == set() and app.unserved_counts() == {}

