"""A scheduler process driven tick by tick over a pipe (tests/integration/test_schedule_workers.py).

    python -m tests.integration.schedule_driver DATABASE_URL

Reads lines ``step <unix seconds>`` from stdin; for each runs one scheduler step at that
instant (``Scheduler.run_once(now=...)``, what every worker runs) and answers one line: the
idempotency keys of the jobs this process made, space-separated (empty: none). ``quit`` ends.
"""

from __future__ import annotations

import sys

from tether import Tether
from tether.worker.scheduler import Scheduler


def main(url: str) -> None:
    app = Tether(url)
    scheduler = Scheduler(app.store)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "quit":
            break
        made = scheduler.run_once(now=float(arg))
        print(" ".join(j.idempotency_key for j in made), flush=True)
    app.close()


if __name__ == "__main__":
    main(sys.argv[1])
