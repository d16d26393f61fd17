"""The chaos runner's worker processes (``bench/chaos.py``): start them, SIGKILL one at random
and replace it, replace any that exits on its own, and stop them all with SIGTERM."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
APP = "bench.chaos_app:app"


class Workers:
    """Worker slots; a slot whose process died (killed, or exited) gets a fresh process."""

    def __init__(self, url: str, cfg: Any, env: dict[str, str], logs: Path) -> None:
        self.url, self.cfg, self.env, self.logs = url, cfg, env, logs
        self.procs: list[subprocess.Popen] = [self._spawn(i) for i in range(cfg.workers)]
        self.kills = 0
        self.unexpected_exits: list[int] = []

    def _spawn(self, slot: int) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "tether.worker", "--app", APP, "--database-url", self.url,
               "--concurrency", str(self.cfg.concurrency), "--lease-ttl", str(self.cfg.lease_ttl),
               "--poll-interval", "0.05"]
        log = open(self.logs / f"worker-{slot}.log", "ab")
        try:
            return subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=log, stderr=log)
        finally:
            log.close()

    def tend(self) -> None:
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                self.unexpected_exits.append(p.returncode)
                self.procs[i] = self._spawn(i)

    def kill_one(self, rng: random.Random) -> None:
        slot = rng.randrange(len(self.procs))
        proc = self.procs[slot]
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            self.kills += 1
        self.procs[slot] = self._spawn(slot)

    def stop(self) -> list[int]:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = []
        for p in self.procs:
            try:
                codes.append(p.wait(60))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait(10))
        return codes
