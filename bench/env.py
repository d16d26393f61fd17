"""What every workload gets besides its sizes: the run count, the peers to run, a logger."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field


@dataclass
class Env:
    runs: int = 3
    peers: tuple[str, ...] = ()
    verbose: bool = True
    started: float = field(default_factory=time.monotonic)

    def log(self, msg: str) -> None:
        if self.verbose:
            print(f"[{time.monotonic() - self.started:7.1f}s] {msg}", file=sys.stderr, flush=True)
