"""One module per workload. Each exposes KEY, TITLE and ``run(backend, sizes, env) -> dict``."""

from __future__ import annotations

from . import (w1_throughput, w2_enqueue, w3_latency, w4_calls, w5_claim, w6_recovery,
               w7_memory, w8_llm, w9_scale, w10_big, w11_fanout, w12_fairness)

WORKLOADS = {m.KEY: m for m in (w1_throughput, w2_enqueue, w3_latency, w4_calls, w5_claim,
                                 w6_recovery, w7_memory, w8_llm, w9_scale, w10_big, w11_fanout,
                                 w12_fairness)}
