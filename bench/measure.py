"""Measurement loops shared by tether and the peers: draining a queue, pickup stamps."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Callable


def drain(done: Callable[[], int], n: int, *, timeout: float, poll: float = 0.01,
          coarse: float = 0.1, procs: list | None = None,
          clock: Callable[[], float] = time.perf_counter,
          sleep: Callable[[float], None] = time.sleep) -> dict:
    """Wait until ``done()`` reaches ``n``. The rate counts from the first completion seen
    (process start-up excluded) to the last; a drain cut by ``timeout`` reports the rate
    over what it finished, flagged ``capped``. A drain so short that every job finished
    between two polls (``--quick``) is rated from the start of the wait instead, start-up
    included, and flagged ``with_startup``.

    ``done()`` is a query on the database being drained, and on a big queue it costs that
    database real work (a count over every finished row): polled every ``poll`` seconds
    throughout, it took CPU from the engine it measured. So ``poll`` holds only where the
    two ends are timed (until the first completion, and once the rate so far says the last
    is under two ``coarse`` polls away); between them the wait is ``coarse``, as long as
    that leaves the end at least two polls away. Every engine and peer is drained by this
    same function, so they all pay the same."""
    start = clock()
    t0 = None
    n0 = 0
    d = 0
    capped = False
    died = False
    while True:
        d = done()
        now = clock()
        if t0 is None and d > 0:
            t0, n0 = now, d
        if d >= n:
            break
        if now - start > timeout:
            capped = True
            break
        if procs and all(p.poll() is not None for p in procs):
            died = True
            break
        sleep(_next_poll(d - n0, n - d, now - t0 if t0 is not None else 0.0, poll, coarse))
    rate = (d - n0) / (now - t0) if t0 is not None and now > t0 and d > n0 else None
    with_startup = rate is None and d > 0
    if with_startup:
        rate = d / (now - start)
    out = {"jobs_per_s": rate, "done": d, "jobs": n, "capped": capped,
           "wall_s": now - start, "first_done_s": None if t0 is None else t0 - start,
           "with_startup": with_startup}
    if died:
        out["error"] = f"every worker process exited (codes {[p.returncode for p in procs]})"
    elif d == 0:
        out["error"] = f"no job finished within {timeout:.0f}s"
    return out


def _next_poll(moved: int, left: int, elapsed: float, poll: float, coarse: float) -> float:
    """How long to wait before the next ``done()``: ``poll`` near either end, else up to
    ``coarse``, never more than a quarter of the time the rate so far says is left."""
    if moved <= 0 or elapsed <= 0 or coarse <= poll:
        return poll
    eta = left / (moved / elapsed)
    return poll if eta < 2 * coarse else min(coarse, eta / 4)


class StampFile:
    """Jobs append ``marker start_time pid`` lines; this reads them back as they appear."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        self._offset = 0
        self._seen: dict[str, tuple[float, int]] = {}

    def _read(self) -> None:
        with open(self.path) as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind("\n")
        if end < 0:
            return
        self._offset += len(data[:end + 1].encode())
        for line in data[:end].splitlines():
            parts = line.split()
            if len(parts) >= 2:
                self._seen[parts[0]] = (float(parts[1]), int(parts[2]) if len(parts) > 2 else 0)

    def wait(self, marker: str, timeout: float, interval: float = 0.001) -> tuple[float, int] | None:
        deadline = time.monotonic() + timeout
        while True:
            self._read()
            if marker in self._seen:
                return self._seen[marker]
            if time.monotonic() > deadline:
                return None
            time.sleep(interval)


def pickup_latencies(submit: Callable[[str], None], stamps: StampFile, samples: int, *,
                     gap: tuple[float, float], timeout: float = 10.0,
                     warmup: int = 2) -> dict:
    """Low load: one job at a time, a short random gap between them. Latency = the start
    time the job wrote minus the time just before the submit call (same machine clock)."""
    from .stats import percentile
    lat: list[float] = []
    lost = 0
    rng = random.Random(8)
    for i in range(samples + warmup):
        marker = f"m{i}-{rng.randrange(1 << 30)}"
        t = time.time()
        submit(marker)
        got = stamps.wait(marker, timeout)
        if got is None:
            lost += 1
            if lost >= 3 and not lat:
                break  # the worker is not picking anything up: report, do not wait on
        elif i >= warmup:
            lat.append(got[0] - t)
        time.sleep(rng.uniform(*gap))
    return {"p50_ms": _ms(percentile(lat, 50)), "p99_ms": _ms(percentile(lat, 99)),
            "max_ms": _ms(max(lat) if lat else None), "samples": len(lat), "lost": lost}


def _ms(v: float | None) -> float | None:
    return None if v is None else v * 1000
