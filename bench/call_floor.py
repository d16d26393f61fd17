"""W4's floor: the same journaled calls with the least work a call can do, on SQLite.

``commit_cost.py`` bounds W4 by its durable commits alone, as if a call cost no CPU. This
measures the other side: a bare implementation of W4 that keeps the two promises a journaled
call makes, and nothing else tether does, so W4's tether figures can be read against what
CPython and this disk allow at all:

- each call's reservation (a journal row, both accumulators) is durable before the simulated
  provider is asked, and its settlement (the journal row finished, a ledger row, both
  accumulators) is durable before the call returns;
- the calls in flight share transactions: ``concurrency`` coroutines on one event loop queue
  their writes, and one thread writes everything queued during a turn of the loop in ONE
  transaction (the lock read, then ``executemany`` per statement) — tether's own batching
  (``core/combining.py``) without its layers.

The rows are tether's, written with tether's own SQL (``queries/``) into a database its
migrations made, so every commit writes the pages tether's commits write. Left out, which
tether must do: limit checks, lease and cancel checks, the canonical JSON and size checks of
a result, usage validation, error classification, rate limits, stats, the group committer's
savepoints, and every layer between ``ctx.call`` and the store.

Two more variants tell where the floor's time goes. ``settle_behind`` (what a weaker promise
would buy, never tether's) does not wait for a settlement: the call returns as soon as its
settlement is queued, so it commits with the next calls' reservations — one commit per
``concurrency`` calls instead of two. ``writer_process`` keeps both promises but writes in a
process of its own, so the rows are built and bound under another GIL, on the other core, and
only the batches and their acknowledgements cross a pipe. ``loop_writes`` writes on the event
loop's own thread, which blocks for every commit (tether never blocks an async job's loop on
the store): what the hand-off to the writing thread and back costs. ``in_turns`` keeps both
promises and the same batches but runs no calls at once: one thread writes ``concurrency`` reservations,
asks the provider for each in turn and writes their settlements — what the calls cost with no
machinery to overlap them, which a real provider's latency makes indispensable. ``threads``
runs the calls as ``ctx.map`` does, on ``concurrency`` threads whose writes a leader among them
gathers, instead of as coroutines.
"""

from __future__ import annotations

import asyncio
import functools
import json
import multiprocessing
import shutil
import sqlite3
import threading
import time
import uuid
from typing import Callable, NamedTuple

from .backends import SCRATCH
from .commit_cost import _running_job


def _fail(futures: list, exc: BaseException) -> None:
    for f in futures:
        if not f.done():
            f.set_exception(exc)


class _Writer:
    """Writes what coroutines queue, one transaction per turn of the loop, on one thread."""

    def __init__(self, write, *, on_loop: bool = False) -> None:
        self._write = write
        self._on_loop = on_loop
        self._mutex = threading.Lock()
        self._queued: list = []
        self._turn: list = []
        self._writing = False

    def submit(self, loop: asyncio.AbstractEventLoop, op) -> asyncio.Future:
        future = loop.create_future()
        if not self._turn:
            loop.call_soon(self._hand_off, loop)
        self._turn.append((op, future))
        return future

    def _hand_off(self, loop) -> None:
        turn, self._turn = self._turn, []
        if self._on_loop:  # the loop itself writes, and blocks meanwhile
            self._write([op for op, _ in turn])
            _resolve([f for _, f in turn])
            return
        with self._mutex:
            self._queued.extend(turn)
            start, self._writing = not self._writing, True
        if start:
            loop.run_in_executor(None, self._drain, loop)

    def _drain(self, loop) -> None:
        while True:
            with self._mutex:
                batch, self._queued = self._queued, []
                if not batch:
                    self._writing = False
                    return
            try:
                self._write([op for op, _ in batch])
            except BaseException as exc:  # the awaiting coroutines raise it, never hang
                loop.call_soon_threadsafe(_fail, [f for _, f in batch], exc)
                with self._mutex:
                    self._writing = False
                return
            loop.call_soon_threadsafe(_resolve, [f for _, f in batch])


class _ThreadWriter:
    """Writes what threads submit: the first caller finding no write in progress leads it,
    waiting (at most 1 ms) until every thread still making calls has queued, writes the batch
    in one transaction and wakes its callers; a caller queued meanwhile leads the next one —
    tether's combining (``core/combining.py``, ``job/batching.py``) without its layers."""

    def __init__(self, write, threads: int) -> None:
        self._write = write
        self._mutex = threading.Lock()
        self._full = threading.Condition(self._mutex)
        self._pending: list[list] = []
        self._leading = False
        self._active = threads

    def submit(self, op) -> None:
        slot = [op, threading.Lock(), False]  # the op, its caller's lock, "you lead next"
        slot[1].acquire()
        with self._mutex:
            self._pending.append(slot)
            follow = self._leading
            self._leading = True
            if follow and len(self._pending) >= self._active:
                self._full.notify()
        if follow:
            slot[1].acquire()
            if not slot[2]:
                return
        self._lead()

    def leave(self) -> None:
        with self._mutex:
            self._active -= 1
            self._full.notify()

    def _lead(self) -> None:
        with self._mutex:
            deadline = time.monotonic() + 0.001
            while len(self._pending) < self._active and time.monotonic() < deadline:
                self._full.wait(deadline - time.monotonic())
            batch, self._pending = self._pending, []
        self._write([slot[0] for slot in batch])
        with self._mutex:
            successor = self._pending[0] if self._pending else None
            self._leading = successor is not None
        for slot in batch:
            slot[1].release()
        if successor is not None:
            successor[2] = True
            successor[1].release()


def _resolve(futures) -> None:
    for f in futures:
        f.set_result(None)


def _open_writer(db: str, job, attempt: int, price, profile_id: str):
    """``write(ops)``: one transaction writing a batch of reservations and settlements, as
    tether's rows, on a connection of its own; and ``close()``."""
    from tether.store.queries import positional
    from tether.store.sqlite.tx import QUERIES

    sql = {name: positional(QUERIES[name])
           for name in ("lock_calls", "journal_reserve", "journal_finish", "insert_ledger",
                        "update_budget_row")}
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA synchronous = FULL")
    money = str  # as the SQLite store binds Decimal amounts
    rates = {"input_per_mtok": money(price.input_per_mtok),
             "output_per_mtok": money(price.output_per_mtok),
             "cached_input_per_mtok": None, "cache_write_per_mtok": None,
             "cache_write_1h_per_mtok": None}
    totals = {"spent_usd": 0, "reserved_usd": 0, "calls": 0, "reserved_calls": 0,
              "input_tokens": 0, "output_tokens": 0, "reserved_input_tokens": 0,
              "reserved_output_tokens": 0, "examples": 0}

    def run(name: str, rows: list[dict]) -> None:
        text, bind = sql[name]
        conn.executemany(text, [bind(r) for r in rows])

    def write(ops: list[tuple]) -> None:
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        text, bind = sql["lock_calls"]
        conn.execute(text, bind({"job_id": job.id, "job_key": str(job.id)})).fetchall()
        reserves, finishes, ledger = [], [], []
        for op in ops:
            if op[0] == "reserve":
                _, key, want, fingerprint = op
                totals["reserved_usd"] += want.cost_usd
                totals["reserved_calls"] += 1
                reserves.append({
                    "job_id": job.id, "key": key, "stage": None, "attempt": attempt,
                    "provider": "simulated", "model": "sim-small", "request_hash": None,
                    "fingerprint": fingerprint, "reserved_usd": money(want.cost_usd),
                    "reserved_input_tokens": want.input_tokens,
                    "reserved_output_tokens": want.output_tokens, "now": now})
            else:
                _, key, want, usage, result = op
                cost = price.cost(usage)
                totals["reserved_usd"] -= want.cost_usd
                totals["reserved_calls"] -= 1
                totals["spent_usd"] += cost
                totals["calls"] += 1
                finishes.append({
                    "job_id": job.id, "key": key, "attempt": attempt, "status": "done",
                    "result": result, "usage": json.dumps(usage.to_dict()),
                    "cost_usd": money(cost), "error_code": None, "error_summary": None,
                    "now": now})
                ledger.append(dict(
                    rates, job_id=job.id, project=job.project, stage=None, key=key,
                    attempt=attempt, provider="simulated", model="sim-small",
                    input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                    cached_input_tokens=0, reasoning_tokens=0, cache_write_tokens=0,
                    cache_write_1h_tokens=0, price_profile=profile_id,
                    cost_usd=money(cost), reserved_usd=money(want.cost_usd), confirmed=True,
                    overrun=False, now=now))
        run("update_budget_row", [
            dict(totals, spent_usd=money(totals["spent_usd"]),
                 reserved_usd=money(totals["reserved_usd"]), scope=scope, key=key, now=now)
            for scope, key in (("job", str(job.id)), ("project", job.project))])
        if finishes:
            run("journal_finish", finishes)
        if reserves:
            run("journal_reserve", reserves)
        if ledger:
            run("insert_ledger", ledger)
        conn.execute("COMMIT")

    return write, conn.close


def _serve(pipe, open_writer) -> None:
    """(in the writer process) Write each batch received; answer once it has committed."""
    write, close = open_writer()
    try:
        while (ops := pipe.recv()) is not None:
            write(ops)
            pipe.send(None)
    finally:
        close()


def _writer_process(open_writer):
    """The writer in a process of its own (its own GIL, on the other core): batches go out
    and acknowledgements come back over a pipe."""
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=_serve, args=(theirs, open_writer), daemon=True)
    child.start()

    def write(ops: list[tuple]) -> None:
        ours.send(ops)
        ours.recv()

    def close() -> None:
        ours.send(None)
        child.join(10)

    return write, close


class _Calls:
    """What every variant shares: W4's calls (key, prompt, reservation, the provider's answer,
    the settlement) and the write that commits a batch of them, which counts its commits."""

    def __init__(self, job, price, provider, write, n: int, concurrency: int) -> None:
        self.job, self.price, self.provider = job, price, provider
        self._write = write
        self.n, self.concurrency = n, concurrency
        self.commits = 0

    def write(self, ops: list[tuple]) -> None:
        self._write(ops)
        self.commits += 1

    def reserve(self, i: int) -> tuple:
        """Call ``i``'s reservation: its worst case priced from its prompt, and the fingerprint
        of what it asks, which the journal keeps as tether's does."""
        from tether.core.usage import Estimate
        from tether.job.replay import call_fingerprint
        estimate = Estimate(input_text=f"item {i}", max_output_tokens=64)
        return ("reserve", f"c{i}", self.price.reservation(estimate),
                call_fingerprint("simulated", "sim-small", estimate, None))

    def settle(self, i: int, reserved: tuple) -> tuple:
        """Ask the provider; the settlement carries the result as the journal keeps it."""
        _, key, want, _ = reserved
        answer = self.provider.complete(f"item {i}", key=key, max_tokens=64,
                                        job_id=self.job.id)
        return ("settle", key, want, answer.usage, json.dumps(answer.value))


def _coroutines(calls: _Calls, *, settle_behind: bool = False, on_loop: bool = False) -> float:
    """``concurrency`` coroutines (a semaphore), their writes handed over once per turn."""
    writer = _Writer(calls.write, on_loop=on_loop)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        gate = asyncio.Semaphore(calls.concurrency)

        async def one(i: int):
            async with gate:
                reserved = calls.reserve(i)
                await writer.submit(loop, reserved)
                settled = calls.settle(i, reserved)
                written = writer.submit(loop, settled)
                if not settle_behind:
                    await written
                return json.loads(settled[4])

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls.n)))
        return time.perf_counter() - started

    return asyncio.run(main())


def _in_turns(calls: _Calls) -> float:
    """``concurrency`` calls at a time with no machinery to overlap them: this thread writes
    their reservations, asks the provider for each in turn, writes their settlements."""
    started = time.perf_counter()
    for first in range(0, calls.n, calls.concurrency):
        turn = range(first, min(calls.n, first + calls.concurrency))
        reserved = [calls.reserve(i) for i in turn]
        calls.write(reserved)
        settled = [calls.settle(i, op) for i, op in zip(turn, reserved)]
        calls.write(settled)
        for op in settled:
            json.loads(op[4])  # what the call returns
    return time.perf_counter() - started


def _on_threads(calls: _Calls) -> float:
    """``concurrency`` threads, each taking the next call until none is left, as ``ctx.map``
    runs a job's items."""
    combined = _ThreadWriter(calls.write, calls.concurrency)
    numbers = iter(range(calls.n))
    taking = threading.Lock()

    def work() -> None:
        while True:
            with taking:
                i = next(numbers, None)
            if i is None:
                combined.leave()
                return
            reserved = calls.reserve(i)
            combined.submit(reserved)
            settled = calls.settle(i, reserved)
            combined.submit(settled)
            json.loads(settled[4])

    started = time.perf_counter()
    pool = [threading.Thread(target=work) for _ in range(calls.concurrency)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - started


class Variant(NamedTuple):
    run: Callable[..., float]
    options: dict
    label: str  # how bench/report.py names it
    note: str
    writer_process: bool = False


VARIANTS = {
    "durable": Variant(_coroutines, {}, "floor: a bare implementation (calls/s)",
                       "the least work a call can do"),
    "settle_behind": Variant(_coroutines, {"settle_behind": True},
                             "floor, settlement not awaited (calls/s)",
                             "a weaker promise: never tether's"),
    "writer_process": Variant(_coroutines, {},
                              "floor, rows written by a process of their own (calls/s)",
                              "both promises; batches cross a pipe", writer_process=True),
    "loop_writes": Variant(_coroutines, {"on_loop": True},
                           "floor, rows written on the event loop (calls/s)",
                           "the loop blocks on every commit"),
    "in_turns": Variant(_in_turns, {}, "floor, no calls at once (calls/s)",
                        "8 calls in turn between two commits"),
    "threads": Variant(_on_threads, {},
                       "floor, calls on 8 threads as ctx.map runs them (calls/s)",
                       "the mechanism of the judged job"),
}


def _calls(db: str, job, attempt: int, price, profile_id: str, n: int, concurrency: int,
           bill: str, variant: Variant) -> dict:
    from tether.providers.simulated import SimulatedProvider

    provider = SimulatedProvider(bill, latency_s=0)
    open_writer = functools.partial(_open_writer, db, job, attempt, price, profile_id)
    write, close = _writer_process(open_writer) if variant.writer_process else open_writer()
    calls = _Calls(job, price, provider, write, n, concurrency)
    cpu = time.process_time()  # this process's threads; a writer process's are not counted
    try:
        elapsed = variant.run(calls, **variant.options)
        cpu = time.process_time() - cpu
    finally:
        close()
        provider.close()
    conn = sqlite3.connect(db)
    try:
        done, = conn.execute("SELECT count(*) FROM call_journal WHERE job_id = ? AND status = "
                             "'done'", (job.id,)).fetchone()
        paid, = conn.execute("SELECT count(*) FROM cost_ledger WHERE job_id = ?",
                             (job.id,)).fetchone()
    finally:
        conn.close()
    return {"calls_per_s": n / elapsed, "commits": calls.commits, "journaled": done,
            "ledger_rows": paid, "cpu_us_per_call": None if variant.writer_process
            else cpu / n * 1e6}


def measure(concurrency: int, calls: int, runs: int = 1, only: tuple[str, ...] = ()) -> dict:
    """Every variant (or those in ``only``), ``runs`` times each, interleaved; each run on a
    fresh database."""
    from tether import Tether

    chosen = {name: v for name, v in VARIANTS.items() if not only or name in only}
    out: dict[str, list] = {name: [] for name in chosen}
    for _ in range(runs):
        for name, variant in chosen.items():
            folder = SCRATCH / f"call-floor-{uuid.uuid4().hex[:8]}"
            folder.mkdir(parents=True, exist_ok=True)
            app = Tether(database_url=f"sqlite:///{folder}/tether.db")
            try:
                job, attempt = _running_job(app)
                profile = app.profile_for(job)
                price = profile.price("simulated", "sim-small")
                app.close()
                out[name].append(_calls(str(folder / "tether.db"), job, attempt, price,
                                        profile.id, calls, concurrency, str(folder / "bill"),
                                        variant))
            finally:
                app.close()
                shutil.rmtree(folder)
    return out


if __name__ == "__main__":  # python -m bench.call_floor
    print(json.dumps(measure(8, 5_000, runs=3), indent=2))
