"""``pg_stat_activity`` sampled from outside while a workload runs (W9).

A thread of the harness reads the view every ``interval`` seconds on a connection of its own
to the admin database (so the sampler is never one of the backends it counts) and keeps, for
the benchmark's database: the most backends seen at once (all, and those whose
``application_name`` is the workers'), how many samples caught a backend waiting on a
heavyweight lock (``wait_event_type = 'Lock'``: a row, a tuple, a transaction, the NOTIFY
queue's commit lock, a relation's extension...), and which waits and statements those were,
counted per backend caught, with the longest a caught statement had been running when caught
(its wait is at most that), and what the backends holding those locks were running
(``pg_blocking_pids``: waiter and holder, each by its statement), and where each wait is
(``pg_locks``): a backend waiting for a row holds that row's tuple lock while it waits for
the row's locker to end, so a ``transactionid`` wait with a tuple lock of table T is a row wait
in T, and one with none is not a row wait (an index's uniqueness check waits that way). Other
wait types of active backends (LWLock, IO) are tallied too, as context: they are not
heavyweight lock waits, but they show where busy backends stand.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from .config import PG_ADMIN_URL

IDLE_HOLDER = "(idle in transaction) "
"""Prefixed to a holder's statement when it sits idle in its transaction after running it."""

_SAMPLE = """
SELECT application_name, state, wait_event_type, wait_event, left(query, %s),
       extract(epoch FROM clock_timestamp() - query_start)::float8, pid,
       CASE WHEN wait_event_type = 'Lock' THEN pg_blocking_pids(pid) END
FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()
  AND application_name <> 'tether-bench-sampler'
"""

_WHERE = """
SELECT pid, locktype, relation::text, granted FROM pg_locks
WHERE pid = ANY (%s) AND (locktype = 'tuple' OR NOT granted)
"""


Where = tuple[tuple[str, ...], tuple[str, ...]]
"""A waiting backend's place: the OIDs of the tables whose tuple locks it held, and the lock
types it awaited (both sorted)."""


class ActivitySampler:
    """``start()``, then ``stop()`` returns the summary (``summary()`` reads it at any time)."""

    def __init__(self, dbname: str, *, worker_app: str, interval: float = 0.1,
                 admin: str = PG_ADMIN_URL, query_prefix: int = 200) -> None:
        self.dbname = dbname
        self.worker_app = worker_app
        self.interval = interval
        self.admin = admin
        self.query_prefix = query_prefix
        self.samples = 0
        self.max_connections = 0
        self.max_worker_connections = 0
        self.max_active = 0
        self.lock_samples = 0        # samples in which at least one backend waited on a Lock
        self.lock_backends = 0       # backends caught waiting on a Lock, over every sample
        self.max_lock_waiters = 0
        self.locks: Counter[tuple[str, str]] = Counter()   # (wait_event, query prefix)
        self.lock_age: dict[tuple[str, str], float] = {}   # longest running when caught (s)
        self.other_waits: Counter[str] = Counter()          # "LWLock:WALWrite", "IO:..."
        self.blockers: Counter[tuple[str, str]] = Counter()  # (waiter query, holder query)
        self.where: Counter[tuple[str, Where | None]] = Counter()  # (waiter query, pg_locks)
        self._tables: dict[str, str] = {}  # OID -> name, read from the benchmark's database
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pg-activity", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psycopg
        try:
            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute("SET application_name = 'tether-bench-sampler'")
                while not self._stop.is_set():
                    t = time.monotonic()
                    rows = conn.execute(_SAMPLE, (self.query_prefix, self.dbname)).fetchall()
                    waiting = [r[6] for r in rows if r[2] == "Lock"]
                    where = _where(conn.execute(_WHERE, (waiting,)).fetchall()) if waiting else {}
                    self._take(rows, where)
                    self._stop.wait(max(0.0, self.interval - (time.monotonic() - t)))
        except Exception as exc:  # noqa: BLE001 - reported in the summary, never raised
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _take(self, rows: list[tuple], where: dict[int, Where] | None = None) -> None:
        self.samples += 1
        self.max_connections = max(self.max_connections, len(rows))
        workers = sum(1 for r in rows if r[0] == self.worker_app)
        self.max_worker_connections = max(self.max_worker_connections, workers)
        self.max_active = max(self.max_active, sum(1 for r in rows if r[1] == "active"))
        waiting = [r for r in rows if r[2] == "Lock"]
        if waiting:
            self.lock_samples += 1
            self.lock_backends += len(waiting)
            self.max_lock_waiters = max(self.max_lock_waiters, len(waiting))
            queries = {r[6]: (IDLE_HOLDER if (r[1] or "").startswith("idle in transaction")
                              else "") + _flat(r[4]) for r in rows}
            for r in waiting:
                key = (r[3] or "", _flat(r[4]))
                self.locks[key] += 1
                self.lock_age[key] = max(self.lock_age.get(key, 0.0), r[5] or 0.0)
                for pid in r[7] or []:
                    self.blockers[(key[1], queries.get(pid, "(another database)"))] += 1
                self.where[(key[1], (where or {}).get(r[6]))] += 1
        for r in rows:
            if r[1] == "active" and r[2] and r[2] not in ("Lock", "Client", "Activity"):
                self.other_waits[f"{r[2]}:{r[3]}"] += 1

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return self.summary()

    def summary(self) -> dict:
        return {"samples": self.samples, "interval_s": self.interval,
                "max_connections": self.max_connections,
                "max_worker_connections": self.max_worker_connections,
                "max_active": self.max_active,
                "lock_wait_samples": self.lock_samples,
                "lock_wait_backends": self.lock_backends,
                "max_lock_waiters": self.max_lock_waiters,
                "lock_waits_top": [{"wait_event": e, "query": q, "count": c,
                                    "max_running_s": self.lock_age[(e, q)]}
                                   for (e, q), c in self.locks.most_common(3)],
                "blockers_top": [{"waiter": w, "holder": h, "count": c}
                                 for (w, h), c in self.blockers.most_common(3)],
                "waits_where": [{"waiter": w, "locks": self._describe(x), "count": c}
                                for (w, x), c in self.where.most_common(5)],
                "other_waits_top": [{"wait": w, "count": c}
                                    for w, c in self.other_waits.most_common(3)],
                "errors": self.errors}

    def _describe(self, where: Where | None) -> str:
        """``row lock in jobs; awaits transactionid``: the tables whose tuple locks the waiter
        held, by name, then the lock types it awaited; ``(gone)`` if it had ended."""
        if where is None:
            return "(gone)"
        held, awaits = where
        missing = [oid for oid in held if oid not in self._tables]
        if missing:
            import psycopg
            from psycopg.conninfo import make_conninfo
            try:  # the admin connection cannot see the benchmark database's catalog
                with psycopg.connect(make_conninfo(self.admin, dbname=self.dbname),
                                     application_name="tether-bench-sampler") as conn:
                    self._tables.update(conn.execute(
                        "SELECT oid::text, relname FROM pg_class WHERE oid = ANY (%s::oid[])",
                        (missing,)).fetchall())
            except Exception as exc:  # noqa: BLE001 - the OID stands in for the name
                self.errors.append(f"naming tables: {type(exc).__name__}: {exc}")
        return "; ".join([*(f"row lock in {self._tables.get(oid, oid)}" for oid in held),
                          *(f"awaits {t}" for t in awaits)])


def _where(rows: list[tuple]) -> dict[int, Where]:
    """Per waiting pid, from its ``pg_locks`` rows: see ``Where``."""
    held: dict[int, set[str]] = {}
    awaits: dict[int, set[str]] = {}
    for pid, locktype, relation, granted in rows:
        if granted:
            held.setdefault(pid, set()).add(relation)
        else:
            awaits.setdefault(pid, set()).add(locktype)
    return {pid: (tuple(sorted(held.get(pid, ()))), tuple(sorted(awaits.get(pid, ()))))
            for pid in held.keys() | awaits.keys()}


def _flat(query: str | None) -> str:
    return " ".join((query or "").split())
