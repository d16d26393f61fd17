"""A deterministic simulated LLM provider with latency, usage, failures and its own bill.

No real LLM is reachable here, so tests, the demo and the benchmarks call this instead. Like a
real provider it keeps its own record of what it charged — an append-only JSON-lines file
outside tether's store, each line written (one ``write`` to an ``O_APPEND`` file) before the
response is returned — so tests can check tether's ledger against what the "provider" billed,
including across SIGKILLs: a completed ``write`` is in the kernel's page cache and survives the
death of the process. Only a power loss or kernel crash can lose it; ``fsync=True`` also
flushes every line to the disk before answering (what a test of machine crashes would need),
at the price of one disk flush per call.

Answers depend only on (seed, model, prompt); failures depend on (seed, key, how often this
process has been asked for that key), so a retried call can succeed.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from collections.abc import Callable

from ..core.pricing import load_profile
from ..core.usage import Metered, Usage
from ..errors import PolicyBlock, TransientError

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
         "zulu").split()
_WORD_OF_BYTE = tuple(WORDS[b % len(WORDS)] for b in range(256))


@dataclass(frozen=True)
class BillEntry:
    ts: float
    key: str
    job_id: int | None
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    status: str
    pid: int


_pid = os.getpid()  # the process id, kept current in forked children (a syscall per call)


def _after_fork() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork)


_quoted = json.encoder.encode_basestring_ascii  # a JSON string literal, as json.dumps writes


def _unit(seed: int, *parts: object) -> float:
    h = hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def count_tokens(text: str) -> int:
    """The simulated tokenizer: about four bytes a token, never more tokens than bytes."""
    return max(1, (len(text.encode()) + 3) // 4)


class SimulatedProvider:
    """``complete(prompt, key=, max_tokens=)`` returns ``Metered({"text": ...}, Usage)``."""

    name = "simulated"

    def __init__(self, bill_path: str | Path, *, seed: int = 0, model: str = "sim-small",
                 latency_s: float | tuple[float, float] = 0.0, transient_rate: float = 0.0,
                 refusal_rate: float = 0.0, retry_after_s: float | None = None,
                 outage: Callable[[], float | None] | None = None,
                 sleep: Callable[[float], None] = time.sleep, fsync: bool = False) -> None:
        self.bill_path = Path(bill_path)
        self.bill_path.parent.mkdir(parents=True, exist_ok=True)
        self.seed = seed
        self.model = model
        self.latency_s = latency_s
        self.transient_rate = transient_rate
        self.refusal_rate = refusal_rate
        self.retry_after_s = retry_after_s
        self.outage = outage
        self.sleep = sleep
        self.fsync = fsync
        self.prices = load_profile()
        self._asked: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._fd: tuple[int, int] | None = None

    def _latency(self, key: str) -> float:
        if isinstance(self.latency_s, tuple):
            low, high = self.latency_s
            return low + (high - low) * _unit(self.seed, "latency", key)
        return self.latency_s

    def bill(self, key: str, job_id: int | None, model: str, usage: Usage, status: str,
             *, batch: bool = False) -> None:
        """One line on the bill; ``batch``: an item of a batch, at the batch price."""
        price = (self.prices.batch_price if batch else self.prices.price)("simulated", model)
        cost = price.cost(usage) if status != "refused_unbilled" else Decimal(0)
        # The line json.dumps of the dict would write, formatted directly: json.dumps was
        # most of what billing cost.
        line = (f'{{"ts": {time.time()!r}, "key": {_quoted(key)}, '
                f'"job_id": {"null" if job_id is None else int(job_id)}, '
                f'"model": {_quoted(model)}, "input_tokens": {usage.input_tokens}, '
                f'"output_tokens": {usage.output_tokens}, "cost_usd": "{cost}", '
                f'"status": {_quoted(status)}, "pid": {_pid}}}\n')
        fd = self._bill_fd()
        os.write(fd, line.encode())
        if self.fsync:
            os.fsync(fd)

    def _bill_fd(self) -> int:
        """The bill file, opened once per process (``O_APPEND``: each line is one atomic
        ``write``, so processes and threads sharing the file never interleave lines)."""
        pid = _pid
        if self._fd is None or self._fd[0] != pid:  # a forked child opens its own
            with self._lock:
                if self._fd is None or self._fd[0] != pid:
                    self._fd = (pid, os.open(self.bill_path,
                                             os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        return self._fd[1]

    def close(self) -> None:
        """Close the bill file (it is reopened by the next call)."""
        with self._lock:
            if self._fd is not None and self._fd[0] == os.getpid():
                os.close(self._fd[1])
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def answer(self, prompt: str, max_tokens: int, model: str) -> tuple[str, int]:
        """8-47 words (at most ``max_tokens``) drawn from one 64-byte digest of (seed, model,
        prompt): deterministic, and cheap enough that a zero-latency benchmark measures the
        engine rather than the simulator (a seeded ``random.Random`` per call cost more than
        the rest of the call)."""
        h = hashlib.blake2b(f"{self.seed}:{model}:{prompt}:answer".encode()).digest()
        n = max(1, min(max_tokens, 8 + h[0] * 40 // 256))
        return " ".join(map(_WORD_OF_BYTE.__getitem__, h[1:1 + n])), n

    def complete(self, prompt: str, *, key: str, max_tokens: int = 256, model: str | None = None,
                 job_id: int | None = None) -> Metered:
        model = model or self.model
        with self._lock:
            self._asked[key] += 1
            nth = self._asked[key]
        delay = self._latency(key)
        if delay > 0:
            self.sleep(delay)
        down_for = self.outage() if self.outage else None
        if down_for is not None:
            raise TransientError("simulated provider overloaded (503)", status=503,
                                 retry_after=down_for)
        if self.transient_rate and _unit(self.seed, "transient", key, nth) < self.transient_rate:
            raise TransientError("simulated provider rate limited (429)", status=429,
                                 retry_after=self.retry_after_s)
        usage_in = count_tokens(prompt)
        if self.refusal_rate and _unit(self.seed, "refusal", key) < self.refusal_rate:
            usage = Usage(input_tokens=usage_in, output_tokens=1)
            self.bill(key, job_id, model, usage, "refused")
            raise PolicyBlock(f"simulated provider refused call {key!r}", billed=True)
        text, n_out = self.answer(prompt, max_tokens, model)
        usage = Usage(input_tokens=usage_in, output_tokens=n_out)
        self.bill(key, job_id, model, usage, "ok")
        return Metered({"text": text, "model": model}, usage)


def read_bill(path: str | Path) -> list[BillEntry]:
    """Every call the simulated provider billed, in order (a torn last line is ignored)."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for line in p.read_text().splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        out.append(BillEntry(ts=d["ts"], key=d["key"], job_id=d.get("job_id"), model=d["model"],
                             input_tokens=d["input_tokens"], output_tokens=d["output_tokens"],
                             cost_usd=Decimal(d["cost_usd"]), status=d["status"], pid=d["pid"]))
    return out


def bill_total(path: str | Path, *, job_id: int | None = None) -> Decimal:
    return sum((e.cost_usd for e in read_bill(path) if job_id is None or e.job_id == job_id),
               Decimal(0))
