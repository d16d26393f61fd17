"""procrastinate's side of the benchmark (PostgreSQL, LISTEN/NOTIFY on, default polling).

``python -m bench.peers.procrastinate_app`` runs one worker process at its defaults
(``run_worker()``: concurrency 1)."""

from __future__ import annotations

import os
import time

import procrastinate

app = procrastinate.App(connector=procrastinate.PsycopgConnector(
    conninfo=os.environ.get("BENCH_PROCRASTINATE_URL", "")))


@app.task(name="noop")
async def noop():
    return None


@app.task(name="stamp")
async def stamp(path: str, marker: str):
    now = time.time()
    with open(path, "a") as fh:
        fh.write(f"{marker} {now!r} {os.getpid()}\n")


if __name__ == "__main__":
    app.run_worker(wait=True)
