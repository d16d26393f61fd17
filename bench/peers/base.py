"""What a peer must offer the workloads: bulk enqueue, worker processes, a done count, and
a one-job submit for pickup latency. The measurement loops are shared with tether.

The fairness rule: a peer runs as its user gets it, each of its ``VARIANTS`` a row of its
own: ``defaults`` (its documented defaults, never configured down to tether's settings),
and where they differ, its settings at tether's durability or its own published throughput
settings. Each row records its settings in words (``settings``)."""

from __future__ import annotations

import importlib.util
import subprocess
import time

from ..backends import SCRATCH, stop
from ..measure import StampFile, drain, pickup_latencies


class Peer:
    family = "peer"
    backend = "postgres"
    module = ""
    VARIANTS: dict[str, str] = {"defaults": "its documented defaults"}

    def __init__(self, variant: str = "defaults") -> None:
        if variant not in self.VARIANTS:
            raise ValueError(f"{self.family}: unknown variant {variant!r}")
        self.variant = variant

    @property
    def name(self) -> str:
        """``huey`` for the defaults row, ``huey_durable`` for another variant's."""
        return self.family if self.variant == "defaults" else f"{self.family}_{self.variant}"

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec(self.module) is None:
            return False, f"{self.module} is not installed (pip install -e '.[bench]')"
        return True, ""

    def skipped(self, why: str) -> dict:
        """What a workload records for a peer whose package is absent: skipped, and why."""
        return {"skipped": why, "variant": self.variant, "settings": self.VARIANTS[self.variant]}

    # --- what each peer implements ----------------------------------------------------------

    def setup(self) -> None: ...
    def teardown(self) -> None: ...
    def enqueue_noop(self, n: int, batch: int) -> None: ...
    def enqueue_single(self, n: int) -> None: ...
    def submit_stamp(self, path: str, marker: str) -> None: ...
    def done(self) -> int: ...
    def start_workers(self, k: int) -> list[subprocess.Popen]: ...
    def info(self) -> dict:
        """Version and settings worth recording with each figure."""
        from importlib.metadata import version
        return {"version": version(self.module), "variant": self.variant,
                "settings": self.VARIANTS[self.variant]}

    def ready(self, procs: list[subprocess.Popen]) -> bool:
        return True

    # --- the workloads, shared --------------------------------------------------------------

    def throughput(self, sz, processes: int) -> dict:
        self.setup()
        procs: list[subprocess.Popen] = []
        try:
            t = time.perf_counter()
            self.enqueue_noop(sz.throughput_jobs, 1_000)
            enqueue_s = time.perf_counter() - t
            procs = self.start_workers(processes)
            res = drain(self.done, sz.throughput_jobs, timeout=sz.drain_timeout_s,
                        procs=procs)
            res["enqueue_jobs_per_s"] = sz.throughput_jobs / enqueue_s
            return res | self.info()
        finally:
            stop(procs)
            self.teardown()

    def latency(self, sz) -> dict:
        self.setup()
        stamps = StampFile(SCRATCH / f"w3-{self.name}.stamps")
        procs: list[subprocess.Popen] = []
        try:
            procs = self.start_workers(1)
            deadline = time.monotonic() + 30
            while not self.ready(procs) and time.monotonic() < deadline:
                time.sleep(0.05)
            return pickup_latencies(lambda m: self.submit_stamp(str(stamps.path), m), stamps,
                                    sz.latency_samples, gap=sz.latency_gap_s) | self.info()
        finally:
            stop(procs)
            self.teardown()
            stamps.path.unlink(missing_ok=True)

    def enqueue_rates(self, sz) -> dict:
        self.setup()
        try:
            self.enqueue_single(1)
            t = time.perf_counter()
            self.enqueue_single(sz.enqueue_single)
            single = sz.enqueue_single / (time.perf_counter() - t)
            t = time.perf_counter()
            self.enqueue_noop(sz.enqueue_batch_jobs, sz.enqueue_batch_size)
            batch = sz.enqueue_batch_jobs / (time.perf_counter() - t)
            return {"single_per_s": single, "batch_jobs_per_s": batch} | self.info()
        finally:
            self.teardown()
