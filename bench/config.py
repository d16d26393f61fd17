"""Sizes of every workload (full and ``--quick``), where scratch data goes, which database."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# Scratch files live under bench/results (gitignored) on the real disk: a tmpfs /tmp would
# make fsync free and every SQLite figure meaningless.
SCRATCH = RESULTS / "scratch"
PG_ADMIN_URL = os.environ.get("TETHER_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
PG_DB_PREFIX = "tether_bench"


@dataclass(frozen=True)
class Sizes:
    concurrency: int = 8            # per worker process, for tether and every peer
    poll_interval: float = 0.5      # tether worker default (python -m tether.worker)
    throughput_jobs: int = 20_000   # W1
    drain_timeout_s: float = 300.0  # W1: a drain slower than this is cut and flagged
    probe_batch: int = 100          # W1: jobs a claim of the batched probe takes (probe.py)
    enqueue_single: int = 1_000     # W2: separate submit() calls
    enqueue_batch_jobs: int = 5_000  # W2: submit_many
    enqueue_batch_size: int = 1_000
    latency_samples: int = 100      # W3
    # Gaps wider than the poll interval, so submits land at random points of a polling
    # worker's cycle (short fixed gaps phase-lock with it and measure ~one full interval).
    latency_gap_s: tuple[float, float] = (0.02, 0.6)
    calls: int = 5_000              # W4
    call_concurrency: int = 8
    call_in_flight: tuple[int, ...] = (8, 64, 256)  # W4 against the floor
    calls_timeout_s: float = 300.0
    claim_small: int = 1_000        # W5
    claim_big: int = 1_000_000
    claim_finished: int = 1_000_000
    claim_samples: int = 200
    claim_batch: int = 8
    recovery_samples: int = 3       # W6
    lease_ttl: float = 5.0
    rss_low: int = 1_000            # W7
    rss_high: int = 100_000
    rss_timeout_s: float = 600.0
    llm_jobs: int = 2_000           # W8
    llm_calls: int = 20             # calls a job, one after another
    llm_latency_s: float = 0.2      # each call's fixed provider latency
    llm_workers: int = 4            # worker processes
    llm_concurrency: int = 64       # jobs (= calls) in flight per worker process
    llm_timeout_s: float = 600.0
    scale_workers: tuple[int, ...] = (1, 2, 4, 8, 16)  # W9: worker processes, step by step
    scale_concurrency: int = 32     # W9: per worker process
    scale_jobs: int = 30_000        # W9: no-op jobs drained at each step
    scale_timeout_s: float = 300.0
    scale_marker_gap_s: tuple[float, float] = (0.02, 0.1)  # W9: between claim-latency markers
    scale_sample_s: float = 0.1     # W9: pg_stat_activity sampling interval
    scale_prefetch: int = -1        # W9: worker --prefetch (-1: the worker's default)
    big_finished: int = 10_000_000  # W10
    big_queued: int = 5_000
    big_failed_every: int = 10      # every 10th finished job failed
    big_span_s: float = 90 * 86400.0  # finish times spread over the 90 days before the load
    big_claim_samples: int = 200
    big_list_calls: int = 200
    big_cli_runs: int = 3
    big_prune_fraction: float = 0.5
    big_prune_baseline_s: float = 10.0
    fanout_children: tuple[int, ...] = (1_000, 10_000, 100_000)  # W11
    fanout_pg_max: int = 100_000    # W11: the largest size run on PostgreSQL
    fanout_workers: int = 1         # W11: worker processes
    fanout_timeout_s: float = 900.0
    fair_backlog: int = 100_000     # W12: tenant A's queued jobs
    fair_newcomer: int = 100        # W12: tenant B's jobs, submitted once A drains
    fair_workers: int = 2           # W12: worker processes
    fair_timeout_s: float = 900.0
    ceiling_seconds: float = 10.0
    ceiling_clients: int = 8
    runs: int = 3

    def to_dict(self) -> dict:
        return asdict(self)


FULL = Sizes()
QUICK = Sizes(throughput_jobs=100, drain_timeout_s=30.0, enqueue_single=30,
              enqueue_batch_jobs=300, enqueue_batch_size=100, latency_samples=6,
              latency_gap_s=(0.02, 0.1),
              calls=40, calls_timeout_s=30.0, call_in_flight=(8, 16), claim_small=100,
              claim_big=3_000,
              claim_finished=3_000, claim_samples=15, recovery_samples=1, lease_ttl=1.0,
              rss_low=50, rss_high=250, rss_timeout_s=60.0, llm_jobs=24, llm_calls=3,
              llm_latency_s=0.05, llm_workers=2, llm_concurrency=4, llm_timeout_s=60.0,
              scale_workers=(1, 2), scale_jobs=3_000, scale_timeout_s=30.0,
              ceiling_seconds=1.0, runs=1, big_finished=20_000, big_queued=500,
              big_claim_samples=40, big_list_calls=20, big_cli_runs=1,
              big_prune_baseline_s=1.0, fanout_children=(50,), fanout_timeout_s=60.0,
              fair_backlog=2_000, fair_newcomer=20, fair_timeout_s=60.0,
              poll_interval=0.2)


def sizes(quick: bool, **overrides) -> Sizes:
    base = QUICK if quick else FULL
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})
