"""Issue 22's schedule test: two real scheduler processes per backend, stepping concurrently
against one database at the same fake store instants, across 100 ticks: exactly 100 jobs per
schedule with the expected identities; then a restart after downtime obeys each catch-up
mode. Each process is told the instant of every step over a pipe, both are told before either
answer is read, so their steps race for the same due rows."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone

import pytest

from tether import FakeClock, Tether
from tests.procs import CHILD_PYTHONPATH
from tests.procs import ROOT

pytestmark = pytest.mark.slow

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
MIN = 60.0
MODES = ("latest", "all", "none")


def key(mode: str, i: int) -> str:
    stamp = datetime.fromtimestamp(T0 + i * MIN, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"schedule:s-{mode}:{stamp}"


class Driver:
    def __init__(self, url: str, log) -> None:  # noqa: ANN001
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.schedule_driver", url], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1,
            env={**os.environ, "PYTHONPATH": CHILD_PYTHONPATH})
        assert self.proc.stdout.readline().strip() == "ready"

    def send(self, now: float) -> None:
        self.proc.stdin.write(f"step {now!r}\n")
        self.proc.stdin.flush()

    def made(self) -> list[str]:
        line = self.proc.stdout.readline()
        assert line, "the driver process died (see its log)"
        return line.split()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(15)


def step(drivers: list[Driver], now: float) -> list[str]:
    for d in drivers:
        d.send(now)
    return [k for d in drivers for k in d.made()]


def test_two_processes_100_ticks_exactly_100_jobs_then_catch_up(database_url, tmp_path):
    setup = Tether(database_url, clock=FakeClock(T0))
    for mode in MODES:
        setup.schedule(f"s-{mode}", cron="* * * * *", type="tick", catch_up=mode,
                       payload={"mode": mode})
    drivers: list[Driver] = []
    log = open(tmp_path / "drivers.log", "a")
    try:
        drivers = [Driver(database_url, log), Driver(database_url, log)]
        made: list[str] = []
        by_process = Counter()
        for i in range(1, 101):
            for d in drivers:
                d.send(T0 + i * MIN + 1)  # each step a second after its tick, as a poller is
            for n, d in enumerate(drivers):
                got = d.made()
                by_process[n] += len(got)
                made += got
        assert len(made) == 300 and len(set(made)) == 300
        for mode in MODES:
            assert sorted(k for k in made if f":s-{mode}:" in k) == [
                key(mode, i) for i in range(1, 101)]
        stored = [j.idempotency_key for j in setup.list(limit=10_000)]
        assert len(stored) == 300 and set(stored) == set(made)

        # everything down through ticks 101..105; back 45 s after tick 105
        after = step(drivers, T0 + 105 * MIN + 45)
        assert sorted(k for k in after if ":s-latest:" in k) == [key("latest", 105)]
        assert sorted(k for k in after if ":s-all:" in k) == [key("all", i)
                                                              for i in range(101, 106)]
        assert [k for k in after if ":s-none:" in k] == []
        assert sorted(step(drivers, T0 + 106 * MIN)) == sorted(key(m, 106) for m in MODES)
        assert step(drivers, T0 + 106 * MIN + 30) == []
        assert len(setup.list(limit=10_000)) == 300 + 1 + 5 + 3
        print(f"jobs made per process over the 100 ticks: {dict(by_process)}")
    finally:
        for d in drivers:
            d.close()
        log.close()
        setup.close()
