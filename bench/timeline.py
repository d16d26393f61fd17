"""Where a journaled call's time goes, read back from the rows a drain left: W8's breakdown.

Each call's journal row is written by its reservation (``created_at``: that transaction's
time) and rewritten by its settlement (``updated_at``); each attempt row has its start and
finish. From them, means in milliseconds over every call and job of the drain:

- ``call_over_latency_ms``: reservation to settlement, less the provider's latency (the
  reservation's commit and the settlement's wait for its transaction);
- ``between_calls_ms``: a settlement to the next call's reservation (the settlement's commit,
  the job's own code, the next reservation's wait);
- ``start_to_first_call_ms`` and ``last_call_to_finish_ms``: a job's start to its first
  reservation, its last settlement to its finish. A claim that starts the attempt stamps its
  start, so time a job spent held ahead (fetch-ahead) counts here too;
- ``mean_running``: jobs started and not finished, averaged over the drain (against the
  slots the ideal assumes full; held jobs count, so it can exceed them)."""

from __future__ import annotations

from statistics import mean
from typing import Any


def call_timeline(db: Any, latency_s: float) -> dict[str, float]:
    """The figures above for the drain in ``db`` (a ``backends.TetherDB``)."""
    epoch = ("extract(epoch from {})" if db.backend == "postgres" else "{}").format
    conn = db.connect()
    try:
        attempts = conn.execute(f"SELECT job_id, {epoch('started_at')}, {epoch('finished_at')} "
                                "FROM job_attempts WHERE finished_at IS NOT NULL").fetchall()
        journal = conn.execute(f"SELECT job_id, {epoch('created_at')}, {epoch('updated_at')} "
                               "FROM call_journal WHERE status = 'done'").fetchall()
    finally:
        conn.close()
    calls: dict[int, list[tuple[float, float]]] = {}
    for job_id, reserved, settled in journal:
        calls.setdefault(int(job_id), []).append((float(reserved), float(settled)))
    inside, between, first, last = [], [], [], []
    for job_id, started, finished in attempts:
        made = sorted(calls.get(int(job_id), []))
        if not made:
            continue
        inside += [settled - reserved - latency_s for reserved, settled in made]
        between += [made[i + 1][0] - made[i][1] for i in range(len(made) - 1)]
        first.append(made[0][0] - float(started))
        last.append(float(finished) - made[-1][1])
    out = {"call_over_latency_ms": inside, "between_calls_ms": between,
           "start_to_first_call_ms": first, "last_call_to_finish_ms": last}
    figures = {name: mean(values) * 1000 for name, values in out.items() if values}
    edges = sorted([(float(s), 1) for _, s, _ in attempts] + [(float(f), -1) for _, _, f in attempts])
    if edges and edges[-1][0] > edges[0][0]:
        running = area = 0.0
        prev = edges[0][0]
        for t, step in edges:
            area += running * (t - prev)
            prev, running = t, running + step
        figures["mean_running"] = area / (edges[-1][0] - edges[0][0])
    return figures
