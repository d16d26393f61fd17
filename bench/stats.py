"""Small statistics: medians over runs, percentiles over samples, guarded ratios."""

from __future__ import annotations

import math
import statistics
from typing import Iterable, Sequence


def median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return statistics.median(vals) if vals else None


def percentile(samples: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100) of ``samples``; None when empty."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None when either is missing or b is zero."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def median_of_runs(runs: list[dict], key: str) -> float | None:
    return median(r.get(key) for r in runs if isinstance(r, dict))


def summarize(runs: list[dict]) -> dict:
    """Median of every numeric key across runs (each run a flat dict), plus the raw runs."""
    keys: list[str] = []
    for r in runs:
        for k, v in r.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in keys:
                keys.append(k)
    out = {k: median_of_runs(runs, k) for k in keys}
    out["runs"] = runs
    return out
