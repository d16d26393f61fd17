"""Workers, queues and API tokens in the store: the operator's side of the tables."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..core.serving import LEGACY_LIVE_S, Serving
from ..core.states import TERMINAL, JobState
from ..fleet import QueueInfo, WorkerInfo
from ..tokens import TokenInfo, hash_secret, new_secret
from .base import FINISHED_COUNT_CAP, EngineStats
from .rows import as_datetime, load_json, to_token
from .transitions import Transitions
from .tx import Tx, present

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def upsert_worker(tx: Tx, worker: WorkerInfo, now: float) -> None:
    tx.run("upsert_worker", id=worker.id, hostname=worker.hostname, pid=worker.pid,
           queues=json.dumps(worker.queues),
           types=None if worker.types is None else json.dumps(sorted(worker.types)),
           versions=None if worker.versions is None else json.dumps(worker.versions),
           lease_ttl=worker.lease_ttl, concurrency=worker.concurrency, now=now)


class Admin(Transitions):
    """Workers, queues, API tokens and engine statistics."""

    def register_worker(self, worker: WorkerInfo) -> None:
        """Write the worker's row (again: its types and TTL replace what it recorded), and
        remember it: a worker whose row a prune deleted while it was silent
        (``forget_gone_workers``) is written again at its next heartbeat."""
        self.__dict__.setdefault("_registered_workers", {})[worker.id] = worker
        with self._write() as tx:
            upsert_worker(tx, worker, self._now(tx, None))

    def stop_worker(self, worker_id: str) -> None:
        with self._write() as tx:
            tx.run("stop_worker", id=worker_id, now=self._now(tx, None))

    def list_workers(self, *, include_stopped: bool = False) -> list[WorkerInfo]:
        with self._read() as tx:
            rows = tx.all("list_workers", include_stopped=include_stopped)
        return [WorkerInfo(id=r["id"], hostname=r["hostname"], pid=int(r["pid"]),
                           queues=load_json(r["queues"]) or [], concurrency=int(r["concurrency"]),
                           started_at=as_datetime(r["started_at"]),
                           last_heartbeat_at=as_datetime(r["last_heartbeat_at"]),
                           stopped_at=as_datetime(r.get("stopped_at")),
                           leases=int(r["leases"] or 0), types=load_json(r["types"]),
                           lease_ttl=r["lease_ttl"], versions=load_json(r.get("versions")))
                for r in rows]

    def serving(self, *, now: float | None = None) -> Serving:
        """What the live workers serve (``core/serving.py`` says what live means)."""
        with self._read() as tx:
            rows = tx.all("live_workers", now=self._now(tx, now), default_ttl=LEGACY_LIVE_S)
        return Serving.of((load_json(r["types"]), load_json(r["queues"]),
                           load_json(r["versions"])) for r in rows)

    def queued_by_type(self) -> dict[tuple[str, str, str], int]:
        """Queued jobs counted by (queue, type, version)."""
        with self._read() as tx:
            return {(r["queue"], r["type"], r["version"]): int(r["n"])
                    for r in tx.all("count_queued_by_type")}

    # --- API tokens -------------------------------------------------------------------------------

    def create_token(self, *, name: str | None, projects: Sequence[str],
                     admin: bool) -> tuple[TokenInfo, str]:
        """A new token and its raw secret (shown once; only its hash is kept)."""
        token_id, raw, digest = new_secret()
        with self._write() as tx:
            now = self._now(tx, None)
            tx.run("insert_token", id=token_id, name=name, token_hash=digest,
                   projects=self._json_param(sorted(set(projects))), admin=bool(admin),
                   now=now)
        info = TokenInfo(token_id, name, tuple(sorted(set(projects))), bool(admin),
                         as_datetime(now))
        return info, raw

    def resolve_token(self, raw: str) -> TokenInfo | None:
        with self._read() as tx:
            row = tx.one("token_by_hash", token_hash=hash_secret(raw))
        return to_token(row) if row else None

    def list_tokens(self) -> list[TokenInfo]:
        with self._read() as tx:
            return [to_token(r) for r in tx.all("list_tokens")]

    def revoke_token(self, token_id: str) -> bool:
        with self._write() as tx:
            return tx.run("revoke_token", id=token_id,
                          now=self._now(tx, None)) == 1

    def schema_version(self) -> int:
        """The newest migration applied: one read of ``schema_migrations``, whatever the size
        of the other tables (``Tether.ping``)."""
        with self._read() as tx:
            rows = tx.all("applied_migrations")
        return max((int(r["version"]) for r in rows), default=0)

    def list_queues(self) -> list[QueueInfo]:
        with self._read() as tx:
            rows = tx.all("list_queues")
        queues: dict[str, QueueInfo] = {}
        for r in rows:
            q = queues.setdefault(r["name"], QueueInfo(r["name"], bool(r["paused"]), {}))
            if r["state"] is not None:
                q.counts[r["state"]] = int(r["n"])
        return list(queues.values())

    def queue_counts(self, *, cap: int = FINISHED_COUNT_CAP) -> list[QueueInfo]:
        """``list_queues`` in time that does not grow with the history: live states counted
        exactly (their rows only), a queue's jobs in each finished state counted up to ``cap``
        and estimated beyond it (``_estimate_jobs``)."""
        live = sorted(s.value for s in JobState if s not in TERMINAL)
        finished = sorted(s.value for s in TERMINAL)
        with self._read() as tx:
            counts = {(r["queue"], r["state"]): int(r["n"])
                      for r in tx.all("count_live_jobs", states=self._list_param(live))}
            queues: dict[str, QueueInfo] = {}
            for r in tx.all("count_finished_jobs", states=self._list_param(finished), cap=cap):
                queues.setdefault(r["queue"], QueueInfo(r["queue"], bool(r["paused"]), {}))
                n = int(r["n"])
                if n >= cap:
                    n = max(cap, self._estimate_jobs(tx, r["queue"], r["state"]))
                counts[(r["queue"], r["state"])] = n
        for (queue, state), n in sorted(counts.items()):
            if n and queue in queues:
                queues[queue].counts[state] = n
        return [queues[name] for name in sorted(queues)]

    def _estimate_jobs(self, tx: Tx, queue: str, state: str) -> int:
        """A queue's jobs in ``state`` beyond the cap: counted (SQLite has no statistics)."""
        return int(present(tx.one("estimate_jobs", queue=queue, state=state))["n"])

    def set_queue_paused(self, name: str, paused: bool) -> QueueInfo:
        with self._write() as tx:
            tx.run("set_queue_paused", name=name, paused=paused,
                   now=self._now(tx, None))
        return next(q for q in self.list_queues() if q.name == name)

    # --- engine statistics ----------------------------------------------------------------------

    def engine_stats(self, *, recent: int = 1000) -> EngineStats:
        """Totals every process agrees on, and a claim-latency histogram of recent first
        attempts (cumulative buckets, Prometheus style)."""
        with self._read() as tx:
            counts = present(tx.one("engine_counts"))
            rows = tx.all("recent_claim_latency", limit=recent)
        latencies = [max(0.0, float(r["latency"])) for r in rows if r["latency"] is not None]
        buckets = {b: sum(1 for x in latencies if x <= b) for b in LATENCY_BUCKETS}
        return {"claims_total": int(counts["claims"]),
                "lease_expiries_total": int(counts["lease_expiries"]),
                "budget_pauses_total": int(counts["budget_pauses"]),
                "budget_thresholds_total": int(counts["budget_thresholds"]),
                "claim_latency_seconds": {"count": len(latencies), "sum": sum(latencies),
                                          "buckets": buckets}}
