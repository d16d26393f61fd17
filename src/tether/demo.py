"""``tether demo``: why tether exists, in under a minute, on the embedded SQLite default.

The example question-generation pipeline (``tether.examples.pipeline``, shipped in the package
so the demo runs from a plain ``pip install tether``) runs in a real worker process on a fresh
SQLite file with a deliberately small budget. The demo kills that worker with SIGKILL in the
middle of the generate stage, starts a fresh one that resumes from the journal without repaying
a completed call, lets the job hit its budget and pause, raises the limit, and lets it finish.
The summary's figures come from tether's store and the simulated provider's own bill, so they
can be checked against each other, and ``verdict`` says whether tether's ledger covers the bill
and why it is higher.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from collections.abc import Callable

from .app import Tether
from .core.states import JobState
from .core.usage import Usage
from .examples.pipeline import app as pipeline_app, sample_text
from .providers.simulated import bill_total, read_bill

APP_SPEC = "tether.examples.pipeline:app"


@dataclass
class DemoResult:
    folder: Path
    database_url: str
    job_id: int
    state: str
    output: Path
    questions: int
    calls_planned: int
    calls_billed: int
    calls_billed_twice: int
    calls_unconfirmed: int
    calls_reused: int
    journal_answers: int
    spent_usd: Decimal
    unconfirmed_usd: Decimal
    billed_usd: Decimal
    estimated_usd: Decimal
    first_limit_usd: Decimal
    final_limit_usd: Decimal
    attempts: int
    kills: int
    budget_pauses: int
    seconds: float
    batch_usd: Decimal = Decimal(0)
    """What the same calls (the ledger's token counts) cost at the provider's batch price
    (``ctx.batch``: docs/batches.md), had the job not needed its answers at once."""
    steps: list[str] = field(default_factory=list)
    verdict: str = ""


def verdict(spent: Decimal, billed: Decimal, unconfirmed: int, unconfirmed_usd: Decimal) -> str:
    """One line: does tether's ledger cover what the provider billed, and why is it higher?

    Promise 3 (docs/design.md): the ledger never records less than providers could bill. It
    records more only for calls in flight at a crash: their outcome is unknown, so each stays
    counted as spent at its worst-case reservation, whether or not the provider billed it.
    """
    if spent < billed:
        return (f"the ledger does NOT cover the provider's bill: ${spent:.6f} recorded < "
                f"${billed:.6f} billed")
    if spent == billed:
        return f"the ledger covers the provider's bill exactly: ${spent:.6f}"
    if unconfirmed == 1:
        lost = "the 1 call in flight at the kill was never confirmed, so it stays"
    else:
        lost = (f"the {unconfirmed} calls in flight at the kill were never confirmed, so they "
                "stay")
    why = (f"{lost} counted as spent at {'its' if unconfirmed == 1 else 'their'} worst case "
           f"(${unconfirmed_usd:.6f})" if unconfirmed
           else "no call was left unconfirmed, so this is a defect")
    return (f"the ledger covers the provider's bill: ${spent:.6f} recorded >= ${billed:.6f} "
            f"billed; it is ${spent - billed:.6f} higher because {why}")


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"demo: timed out waiting for {what}")
        time.sleep(0.02)


def run_demo(folder: Path, *, say: Callable[[str], None] = lambda s: None,
             kill_after_calls: int = 60) -> DemoResult:
    started = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "tether.db"
    for leftover in folder.glob("tether.db*"):
        leftover.unlink()
    bill = folder / "provider-bill.jsonl"
    bill.unlink(missing_ok=True)
    output = folder / "questions.jsonl"  # the workers' TETHER_EXAMPLE_OUTPUT_DIR is folder
    url = f"sqlite:///{db}"
    app = Tether(url)
    app.registry = pipeline_app.registry
    payload = {"text": sample_text(), "questions_per_chunk": 4, "concurrency": 4,
               "output": output.name}
    estimate = app.estimate("qa_pipeline", payload)
    first_limit = (estimate.cost_usd * Decimal("0.3")).quantize(Decimal("0.000001"))
    final_limit = (estimate.cost_usd * Decimal("1.2")).quantize(Decimal("0.000001"))
    job = app.submit("qa_pipeline", payload, project="demo", idempotency_key="demo-document",
                     budget={"max_cost_usd": first_limit})
    steps = [f"submitted job {job.id}: {estimate.calls} calls, worst case "
             f"${estimate.cost_usd:.6f}; budget ${first_limit}"]
    say(steps[-1])

    env = dict(os.environ, TETHER_SIM_BILL=str(bill), TETHER_SIM_LATENCY="0.01",
               TETHER_EXAMPLE_OUTPUT_DIR=str(folder))

    def worker() -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "tether.worker", "--app", APP_SPEC, "--database-url", url,
             "--concurrency", "1", "--lease-ttl", "1", "--poll-interval", "0.05"],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    first = worker()
    say(f"worker {first.pid} started")
    _wait(lambda: len(read_bill(bill)) >= kill_after_calls or first.poll() is not None, 45,
          "the first worker to make calls")
    first.send_signal(signal.SIGKILL)
    first.wait()
    billed_at_kill = len(read_bill(bill))
    stage = app.get(job.id).stage
    steps.append(f"SIGKILLed worker {first.pid} in stage '{stage}' after {billed_at_kill} "
                 "paid calls")
    say(steps[-1])

    second = worker()
    say(f"worker {second.pid} started; it takes the job over when the dead worker's lease expires")
    try:
        _wait(lambda: app.get(job.id).state in (JobState.PAUSED, JobState.SUCCEEDED,
                                                 JobState.FAILED), 45, "the budget pause")
        paused = app.get(job.id)
        if paused.state == JobState.PAUSED:
            steps.append(f"budget reached: paused with {paused.error_code} after spending "
                         f"${paused.budget.used.spent_usd:.6f} of ${first_limit}")
            say(steps[-1])
            app.set_budget(job.id, max_cost_usd=final_limit)
            steps.append(f"raised the limit to ${final_limit}; the job resumes from its journal")
            say(steps[-1])
        _wait(lambda: app.get(job.id).terminal, 45, "the job to finish")
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(15)
        except subprocess.TimeoutExpired:
            second.kill()
    final = app.get(job.id)
    entries = [e for e in read_bill(bill) if e.job_id == job.id]
    per_key = Counter(e.key for e in entries)
    ledger = app.ledger(job.id)
    events = app.events(job.id)
    answers = sum((e.data.get("stats") or {}).get("calls_reused", 0) for e in events)
    unconfirmed = [r for r in ledger if not r.confirmed]
    spent, billed = final.budget.used.spent_usd, bill_total(bill, job_id=job.id)
    unconfirmed_usd = sum((r.cost_usd for r in unconfirmed), Decimal(0))
    result = DemoResult(
        folder=folder, database_url=url, job_id=job.id, state=str(final.state), output=output,
        questions=(final.result or {}).get("questions", 0), calls_planned=estimate.calls,
        calls_billed=len(entries), calls_billed_twice=sum(1 for n in per_key.values() if n > 1),
        calls_unconfirmed=len(unconfirmed), calls_reused=_reused_keys(app, job.id),
        journal_answers=answers, spent_usd=spent, unconfirmed_usd=unconfirmed_usd,
        billed_usd=billed,
        estimated_usd=estimate.cost_usd, first_limit_usd=first_limit,
        final_limit_usd=final_limit, attempts=final.attempt_count, kills=1,
        budget_pauses=sum(1 for e in events if e.kind == "budget_exhausted"),
        seconds=time.monotonic() - started, steps=steps,
        batch_usd=_at_batch_price(app, ledger),
        verdict=verdict(spent, billed, len(unconfirmed), unconfirmed_usd))
    app.close()
    return result


def _at_batch_price(app: Tether, ledger: list[Any]) -> Decimal:
    profile = app.price_profile
    return sum((profile.batch_price(r.provider, r.model).cost(Usage(
        input_tokens=r.input_tokens, output_tokens=r.output_tokens,
        cached_input_tokens=r.cached_input_tokens)) for r in ledger), Decimal(0))


def _reused_keys(app: Tether, job_id: int) -> int:
    """Distinct calls answered from the journal: the keys done before the attempt that finished
    the generate stage (that attempt asked for every key). Summing each attempt's journal
    answers would count a key once per attempt, past the number of planned calls."""
    finished = {c.stage: c.attempt for c in app.checkpoints(job_id)}.get("generate")
    if finished is None:
        return 0
    return sum(1 for e in app.journal(job_id) if e.status == "done" and e.attempt < finished)
