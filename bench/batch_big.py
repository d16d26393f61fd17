"""One job, one provider batch of N requests (default 10,000), on each backend: the time to
reserve and upload (``ctx.batch`` until the job parks), the time to settle once the provider
has finished (one batch poller step: results, N ledger rows, the wake), the write
transactions the whole job took, the process's peak RSS. The simulated provider's batch mode
stands in for the provider (no network).

    .venv/bin/python -m bench.batch_big [N] [--backend sqlite,postgres]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import uuid

from tether import Estimate, JobState, Tether
from tether.job import Lease
from tether.providers.batches import SimulatedBatches
from tether.worker.batch_poller import BatchPoller
from tether.worker.executor import execute


def _url(backend: str, d: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{d}/bench.db"
    from tests.conftest import PG_URL
    from tests.pg import fresh_schema_url
    return fresh_schema_url(PG_URL, f"b_{uuid.uuid4().hex[:12]}")


def run(backend: str, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        app = Tether(_url(backend, d))
        app.add_batch_provider(SimulatedBatches(f"{d}/batches", complete_after_s=0))

        @app.job("big")
        def big(ctx, payload):
            answers = ctx.batch(key="big", provider="simulated", model="sim-small",
                                requests={f"r{i}": {"prompt": f"request {i}",
                                                    "max_tokens": 40} for i in range(n)},
                                estimate=Estimate(input_tokens=50, max_output_tokens=40))
            return len(answers)

        job = app.submit("big")
        writes = [0]
        write = app.store._write

        def counted(*args, **kwargs):  # every write transaction from here to the end
            writes[0] += 1
            return write(*args, **kwargs)
        app.store._write = counted  # type: ignore[method-assign]

        def step() -> float:
            (c,) = app.store.claim("bench", queues=None, limit=1, lease_ttl=600)
            t = time.perf_counter()
            execute(app, c.job, Lease(c.job.id, c.attempt))
            return time.perf_counter() - t
        upload = step()
        assert app.get(job.id).state == JobState.WAITING
        t = time.perf_counter()
        settled = BatchPoller(app.store, app, interval=0).run_once()
        settle = time.perf_counter() - t
        assert settled == 1
        replay = step()
        done = app.get(job.id)
        assert done.state == JobState.SUCCEEDED and done.result == n
        assert len(app.ledger(job.id)) == n
        app.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"reserve_upload_s": upload, "settle_s": settle, "replay_s": replay,
            "write_tx": writes[0], "peak_rss_mib": rss}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=10_000)
    ap.add_argument("--backend", default="sqlite,postgres")
    args = ap.parse_args()
    for backend in args.backend.split(","):
        r = run(backend, args.n)
        print(f"{backend:8} n={args.n}: reserve+upload {r['reserve_upload_s']:.2f} s, "
              f"settle {r['settle_s']:.2f} s, replay {r['replay_s']:.2f} s, "
              f"{r['write_tx']} write transactions in all (claim to finish), "
              f"peak RSS {r['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
