"""A concurrency limit holds across real worker processes, on both backends: two workers of
four slots each run jobs of three keys under a limit of two per key and five in all. Checked
two ways: sampled while they run (``flow_usage``), and exactly afterwards from every attempt's
claim and finish times (the slot is held from the claim to the outcome's commit)."""

from __future__ import annotations

from tether import Tether
from tests.procs import start_worker, stop, wait_until

PER_KEY, TOTAL = 2, 5


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most half-open intervals [start, end) that overlap at one instant."""
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = peak = 0
    for _, step in edges:  # at equal times -1 sorts first: a freed slot, then a claim
        now += step
        peak = max(peak, now)
    return peak


def test_two_worker_processes_never_exceed_a_keys_limit(database_url, tmp_path):
    app = Tether(database_url)
    app.set_flow_limit("type", "boundary_loop", per_key=PER_KEY, total=TOTAL, key="customer")
    log = tmp_path / "workers.log"
    workers = [start_worker(database_url, app="tests.apps.basic:app", concurrency=4, log=log)
               for _ in range(2)]
    wait_until(lambda: len(app.workers()) == 2, timeout=60, what="both workers", watch=workers,
               log=log)
    ids = {app.submit("boundary_loop", {"customer": c, "steps": 6, "step_s": 0.02},
                      idempotency_key=f"{c}-{i}").id: c
           for i in range(8) for c in ("a", "b", "c")}
    samples: list[dict[str | None, int]] = []

    def done() -> bool:
        samples.append({u.key: u.running for u in app.flow_usage()})
        return all(app.get(i).terminal for i in ids)

    try:
        wait_until(done, timeout=120, interval=0.01, what="every job to finish", watch=workers,
                   log=log)
    finally:
        for w in workers:
            stop(w)
    assert {app.get(i).state.value for i in ids} == {"succeeded"}
    assert max(s.get(None, 0) for s in samples) <= TOTAL
    assert max(n for s in samples for k, n in s.items() if k is not None) <= PER_KEY
    by_key: dict[str, list[tuple[float, float]]] = {"a": [], "b": [], "c": []}
    everything = []
    for job_id, key in ids.items():
        for a in app.attempts(job_id):
            span = (a.claimed_at.timestamp(), a.finished_at.timestamp())
            by_key[key].append(span)
            everything.append(span)
    assert {k: most_at_once(v) for k, v in by_key.items()} == dict.fromkeys("abc", PER_KEY)
    assert most_at_once(everything) == TOTAL
    assert len({a.worker_id for i in ids for a in app.attempts(i)}) == 2
    app.close()
