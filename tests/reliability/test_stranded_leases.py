"""A worker must never keep alive a lease on a job it no longer runs.

A worker stands down from its jobs when it cannot heartbeat for a whole lease TTL (disk full,
database unreachable) and forgets them; if its heartbeat then renewed every lease it owns in
the store, those jobs would stay leased to a live worker that will never finish them, and no
rescuer could take them back. Heartbeats renew only the leases of jobs the worker still runs.
"""

from __future__ import annotations

from tether import JobState
from tether.job import Lease
from tether.worker.heartbeat import Heartbeat
from tests.reliability.helpers import client, url_for

S = JobState


def test_heartbeat_renews_only_the_leases_the_worker_still_runs(backend, tmp_path, clock):
    app = client(url_for(backend, tmp_path), clock=clock)
    kept, dropped = app.submit("quick", {}), app.submit("quick", {})
    claims = {c.job.id: c for c in app.store.claim("w1", queues=None, limit=2, lease_ttl=30)}
    for c in claims.values():
        app.store.start(c.job.id, c.attempt)
    running = [Lease(kept.id, claims[kept.id].attempt)]  # the worker gave up `dropped`
    hb = Heartbeat(app.store, "w1", lease_ttl=30, leases=lambda: running, clock=clock)
    for _ in range(3):
        clock.advance(20)
        assert hb.beat() is True
    assert dict(app.store.expire_leases()) == {dropped.id: S.QUEUED}
    assert app.get(kept.id).state == S.RUNNING and app.get(kept.id).lease_owner == "w1"
    assert app.get(dropped.id).state == S.QUEUED and app.get(dropped.id).lease_owner is None
