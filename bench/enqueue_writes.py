"""W2's bulk enqueue, interleaved batch by batch with pgqueuer's, and with variants of the jobs
table that drop secondary indexes: what each write a queued job costs, same run, same load.

Every round submits one batch (``--batch`` no-op jobs, ``submit_many``) to each tether variant
and one to pgqueuer (``Queries.enqueue`` with lists), in turn; each is reported as the median
of its ``--rounds`` batches in jobs/s, and as a ratio to pgqueuer's median. Interleaving one
batch at a time keeps a shared machine's drifting load out of the ratios.

    python -m bench.enqueue_writes --rounds 40 --variant base \
        --variant noidx:jobs_state,jobs_queue_state
"""

from __future__ import annotations

import argparse
import statistics
import time

from .apps import make_app
from .backends import TetherDB
from .peers.pgqueuer_peer import PgQueuerPeer


def _variant(spec: str) -> tuple[str, list[str]]:
    name, _, drops = spec.partition(":")
    return name, [d for d in drops.split(",") if d]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--variant", action="append", default=[],
                    help="name[:index,index...] dropped in that variant's schema")
    ap.add_argument("--sql", action="append", default=[],
                    help="name:statement run in that variant's schema after migrating")
    ap.add_argument("--no-peer", action="store_true")
    args = ap.parse_args(argv)
    variants = [_variant(v) for v in (args.variant or ["base"])]
    extra: dict[str, list[str]] = {}
    for s in args.sql:
        name, _, stmt = s.partition(":")
        extra.setdefault(name, []).append(stmt)
    dbs, apps = {}, {}
    peer = None
    try:
        for name, drops in variants:
            db = dbs[name] = TetherDB("postgres", f"ew_{name}")
            app = apps[name] = make_app(db.url)
            app.submit("noop")
            with db.connect() as conn:
                for index in drops:
                    conn.execute(f"DROP INDEX {index}")
                for stmt in extra.get(name, []):
                    conn.execute(stmt)
        if not args.no_peer:
            pgq = PgQueuerPeer()
            pgq.setup()
            peer = pgq
        times: dict[str, list[float]] = {name: [] for name, _ in variants}
        if peer is not None:
            times["pgqueuer"] = []
        b = args.batch
        with open("/proc/loadavg") as f:
            load0 = f.read().split()[0]
        for r in range(args.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name, _ in order:
                specs = [{"type": "noop"} for _ in range(b)]
                t = time.perf_counter()
                apps[name].submit_many(specs)
                times[name].append(time.perf_counter() - t)
            if peer is not None:
                t = time.perf_counter()
                peer._enqueue(["noop"] * b, [None] * b)
                times["pgqueuer"].append(time.perf_counter() - t)
        with open("/proc/loadavg") as f:
            load1 = f.read().split()[0]
        rates = {k: b / statistics.median(v) for k, v in times.items()}
        print(f"batch {b}, {args.rounds} rounds, load {load0} -> {load1}")
        for k, rate in rates.items():
            ratio = f"  x{rate / rates['pgqueuer']:.3f} pgqueuer" if "pgqueuer" in rates else ""
            q = statistics.quantiles([b / t for t in times[k]], n=4)
            print(f"{k:>12}: {rate:9.0f} jobs/s (quartiles {q[0]:.0f} - {q[2]:.0f}){ratio}")
    finally:
        for app in apps.values():
            app.close()
        for db in dbs.values():
            db.drop()
        if peer is not None:
            peer.teardown()


if __name__ == "__main__":
    main()
