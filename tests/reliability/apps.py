"""Job types for the reliability tests, loaded by real worker processes (and the API server).

Everything a test needs to steer a worker from outside comes in through environment variables,
read when the module is imported:

* ``RELY_BILL``      the simulated provider's bill file (what it charged, fsynced per call)
* ``RELY_CALLS``     a JSON-lines log, one line per provider call *started* (ts, job, key)
* ``RELY_LATENCY``   seconds per simulated call, ``"0.05"`` or a range ``"0.05,0.2"``
* ``RELY_TRANSIENT`` the rate of simulated 429s (seeded per call key)
* ``RELY_OUTAGE``    a file: while it exists, every call is answered 503 with Retry-After equal
                     to the number in it (the provider's ``outage`` hook)
* ``RELY_CLOCK_OFFSET``  seconds: this process's tether app runs on ``OffsetClock(offset)``, a
                     worker whose own clock is wrong
* ``RELY_SKEW_TIME`` seconds: ``time.time`` itself is shifted in this process, as on a machine
                     whose clock is off (only meaningful where the store keeps its own clock:
                     PostgreSQL)
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

if os.environ.get("RELY_SKEW_TIME"):
    _real_time = time.time
    _skew = float(os.environ["RELY_SKEW_TIME"])
    time.time = lambda: _real_time() + _skew  # type: ignore[assignment]

from tether import Estimate, Tether, TransientError  # noqa: E402
from tether.clock import OffsetClock  # noqa: E402
from tether.providers.simulated import SimulatedProvider  # noqa: E402

_offset = os.environ.get("RELY_CLOCK_OFFSET")
app = Tether(clock=OffsetClock(float(_offset)) if _offset else None)


def _latency() -> float | tuple[float, float]:
    raw = os.environ.get("RELY_LATENCY", "0.01")
    if "," in raw:
        low, high = raw.split(",")
        return float(low), float(high)
    return float(raw)


def _outage() -> float | None:
    path = os.environ.get("RELY_OUTAGE")
    if not path:
        return None
    try:
        return float(Path(path).read_text() or "1")
    except (FileNotFoundError, ValueError):
        return None


def _log(path_var: str, **row) -> None:
    path = os.environ.get(path_var)
    if not path:
        return
    line = json.dumps(dict(row, ts=time.time(), pid=os.getpid())) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


sim = SimulatedProvider(os.environ.get("RELY_BILL", "rely-bill.jsonl"),
                        seed=int(os.environ.get("RELY_SEED", "5")), latency_s=_latency(),
                        transient_rate=float(os.environ.get("RELY_TRANSIENT", "0")),
                        retry_after_s=0.05, outage=_outage)


def provider_call(ctx, key: str, prompt: str, max_tokens: int = 24):
    """One journaled, budgeted call; the start of the real provider call is logged."""
    def fn():
        _log("RELY_CALLS", job=ctx.id, key=key, attempt=ctx.attempt, event="start")
        try:
            return sim.complete(prompt, key=key, max_tokens=max_tokens, job_id=ctx.id)
        except TransientError as exc:
            _log("RELY_CALLS", job=ctx.id, key=key, attempt=ctx.attempt, event="refused",
                 status=exc.status, retry_after=exc.retry_after)
            raise
    return ctx.call(key=key, provider="simulated", model="sim-small",
                    estimate=Estimate(input_text=prompt, max_output_tokens=max_tokens), fn=fn)


@app.job("quick")
def quick(ctx, payload):
    """A short job with a couple of safe boundaries and an exactly-once side effect file."""
    ctx.check()
    time.sleep(payload.get("sleep", 0))
    if payload.get("out"):
        with open(payload["out"], "a") as fh:
            fh.write(f"{ctx.id}\n")
    return {"n": payload.get("n")}


@app.job("poison", max_attempts=3)
def poison(ctx, payload):
    """Kills the worker that runs it, every time."""
    if payload.get("marks"):
        with open(payload["marks"], "a") as fh:
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            os.fsync(fh.fileno())
    os.kill(os.getpid(), signal.SIGKILL)


@app.job("steps", max_attempts=5)
def steps(ctx, payload):
    """Many small steps, each a safe boundary (and a durable stage marker)."""
    for i in range(payload.get("steps", 50)):
        ctx.check()
        if payload.get("stage_every") and i % payload["stage_every"] == 0:
            ctx.set_stage(f"step-{i}")
        time.sleep(payload.get("step_s", 0.02))
    return {"steps": payload.get("steps", 50)}


@app.job("calls", max_attempts=30)
def calls(ctx, payload):
    """``n`` simulated provider calls, ``concurrency`` at a time."""
    def one(i):
        return provider_call(ctx, f"c{i}", f"job {ctx.id} call {i} " + "x" * 40)
    outs = ctx.map(one, range(payload.get("n", 10)), concurrency=payload.get("concurrency", 1))
    return {"calls": len(outs)}


@app.job("unsafe", safe_to_retry=False, max_attempts=3)
def unsafe(ctx, payload):
    """Not safe to restart automatically: a lost lease makes it ``interrupted``."""
    deadline = time.monotonic() + payload.get("seconds", 30)
    while time.monotonic() < deadline:
        ctx.check()
        time.sleep(0.05)
    return {}


@app.job("flaky", max_attempts=3)
def flaky(ctx, payload):
    """Fails its first attempt with a 429 carrying Retry-After, then succeeds."""
    if ctx.attempt == 1:
        raise TransientError("rate limited (429)", status=429,
                             retry_after=payload.get("retry_after", 1.0))
    return {"attempt": ctx.attempt}
