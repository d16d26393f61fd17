"""Chaos run: several workers, a few hundred multi-stage LLM jobs, random SIGKILLs, then proof.

    python bench/chaos.py --minutes 5 --backend sqlite
    python bench/chaos.py --minutes 5 --backend postgres     # a private server, restarted once

Worker processes run ``bench.chaos_app:chaos_pipeline`` jobs (four checkpointed stages, several
simulated provider calls each, with random latency, seeded 429s and refusals) under job and
project budgets, and a workflow mix (``--workflow-share``, 20 % by default): fan-out parents
that gather pipeline children without a lease, sleep on a durable timer and merge, and jobs
that wait for a signal the runner sends at a random moment (before or during the wait) or
time out; and pipelines the runner forks from a random stage, or retries from a random stage
after they fail in review (``bench/chaos_reruns.py``). For ``--minutes`` a random worker is
SIGKILLed and replaced every few seconds while more jobs arrive; on PostgreSQL the private
database server (initdb'd here, never the shared one on 5432) is crashed and restarted once
mid-run. Then the kills stop, the workers drain everything, and the invariants of
``tether.testing.invariants`` are checked and printed:

* every job terminal, or paused because its budget ran out;   * no job lost;
* each simulated call billed at most once, except calls with an unconfirmed ledger row and
  calls a retry from a stage paid again (each after its ``call_repaid`` event);
* the billed total within every job and project budget;       * ledger total >= billed total;
* every job's events gap-free and a valid path through the state machine, attempts consistent;
* each wait woke its job at most once, and no gather returned before its children finished.

Exit status 0 when every invariant held, 1 otherwise (2: the run itself could not be set up).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tether import Tether  # noqa: E402
from tether.errors import StoreError  # noqa: E402
from tether.providers.simulated import read_bill  # noqa: E402
from tether.testing.invariants import Check, all_jobs, failed, render, run_checks  # noqa: E402

from bench.chaos_reruns import Reruns  # noqa: E402
from bench.chaos_workers import Workers  # noqa: E402

PROJECTS = ("p0", "p1", "p2", "p3")
COST_PER_CALL = Decimal("0.00005")  # about what a chaos call costs on sim-small


@dataclass
class Config:
    minutes: float = 2.0
    backend: str = "sqlite"
    jobs: int = 300
    workers: int = 4
    concurrency: int = 4
    kill_every: float = 3.0
    lease_ttl: float = 3.0
    seed: int = 1
    transient: float = 0.03
    refusal: float = 0.004
    latency: str = "0.1,0.6"
    tight_share: float = 0.15
    workflow_share: float = 0.2
    fork_share: float = 0.1
    retry_share: float = 0.08
    pg_restart: bool = True
    drain_timeout: float = 300.0
    out: Path | None = None
    quiet: bool = False


@dataclass
class Result:
    checks: list[Check]
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not failed(self.checks)


def _job_specs(cfg: Config, rng: random.Random, start: int, n: int) -> list[dict[str, Any]]:
    from bench.chaos_app import expected_calls
    specs = []
    for k in range(start, start + n):
        if rng.random() < cfg.workflow_share:
            specs.append(_workflow_spec(rng, k))
            continue
        sections = rng.randint(3, 8)
        spec: dict[str, Any] = {
            "type": "chaos_pipeline", "idempotency_key": f"chaos-{k}",
            "project": rng.choice(PROJECTS),
            "payload": {"topic": f"t{k}", "sections": sections,
                        "concurrency": rng.randint(1, 3)},
        }
        if rng.random() < cfg.tight_share:  # a budget that runs out part-way
            limit = COST_PER_CALL * expected_calls(sections) * Decimal(str(rng.uniform(0.3, 0.7)))
            spec["budget"] = {"max_cost_usd": str(limit.quantize(Decimal("0.00000001")))}
        elif rng.random() < 0.5:  # a generous one: limits that hold without biting
            spec["budget"] = {"max_cost_usd": "0.01", "max_calls": 40}
        specs.append(spec)
    return specs


def _workflow_spec(rng: random.Random, k: int) -> dict[str, Any]:
    """A fan-out parent (children gathered, a durable timer, a merge) or a job that waits for
    the runner's signal. Both live in projects whose budgets hold, so none waits on a child
    paused for money (a gather waits for every child, paused ones too, by design)."""
    project = rng.choice(PROJECTS[:3])
    if rng.random() < 0.5:
        return {"type": "chaos_fanout", "idempotency_key": f"chaos-{k}", "project": project,
                "payload": {"topic": f"t{k}", "children": rng.randint(2, 4),
                            "pause_s": rng.choice([0.2, 1.0])},
                "budget": {"max_cost_usd": "0.05"}}
    return {"type": "chaos_approval", "idempotency_key": f"chaos-{k}", "project": project,
            "payload": {"topic": f"t{k}", "timeout_s": rng.choice([2.0, 6.0])}}


def _signal_some(app: Tether, rng: random.Random, pending: dict[int, float]) -> int:
    """Send ``go`` to approval jobs whose moment came (some before they wait: the mailbox
    keeps it); a job that already finished refuses it, as it should. Returns signals sent."""
    from tether.errors import JobStateError
    sent = 0
    now = time.monotonic()
    for job_id, at in list(pending.items()):
        if at > now:
            continue
        del pending[job_id]
        try:
            app.signal(job_id, "go", {"by": "chaos"})
            sent += 1
        except (JobStateError, StoreError):
            pass
    return sent


def _submit(app: Tether, specs: list[dict[str, Any]], deadline: float) -> list[int]:
    """Submit until acknowledged; idempotency keys make a retry after an unknown outcome
    (the database restarting mid-commit) return the jobs that did commit, never twins."""
    while True:
        try:
            return [j.id for j in app.submit_many(specs)]
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _settled(app: Tether) -> bool:
    """No job left to move, read in ONE statement (every queue's counts by state): read
    state by state, a waiting job woken to ``queued`` between two reads was missed."""
    try:
        counts: Counter[str] = Counter()
        for queue in app.store.list_queues():
            counts.update(queue.counts)
        if any(counts[state] for state in ("queued", "leased", "running", "retry_wait",
                                           "pausing", "cancelling", "interrupted", "waiting")):
            return False
        return all(j.error_code == "budget_exhausted"
                   for j in app.store.list_jobs(state="paused", limit=10_000))
    except StoreError:
        return False


def _say(cfg: Config, text: str) -> None:
    if not cfg.quiet:
        print(text, flush=True)


def run(cfg: Config) -> Result:
    out = Path(cfg.out or tempfile.mkdtemp(prefix=f"tether-chaos-{cfg.backend}-"))
    out.mkdir(parents=True, exist_ok=True)
    bill = out / "bill.jsonl"
    rng = random.Random(cfg.seed)
    os.environ["CHAOS_BILL"] = str(bill)
    from bench.chaos_app import app as chaos_app
    server = None
    if cfg.backend == "postgres":
        from tests.pg import PrivateServer
        server = PrivateServer()
        server.start()
        url = server.url
    elif cfg.backend == "sqlite":
        url = f"sqlite:///{out}/chaos.db"
    else:
        raise SystemExit(f"unknown backend {cfg.backend!r}")
    env = dict(os.environ, PYTHONPATH=str(ROOT), CHAOS_BILL=str(bill),
               CHAOS_SEED=str(cfg.seed), CHAOS_LATENCY=cfg.latency,
               CHAOS_TRANSIENT=str(cfg.transient), CHAOS_REFUSAL=str(cfg.refusal),
               TETHER_LOG_LEVEL="WARNING")
    app = Tether(url)
    app.registry = chaos_app.registry
    stats: dict[str, Any] = {"backend": cfg.backend, "out": str(out)}
    workers = None
    try:
        from bench.chaos_app import expected_calls
        # p3's jobs share a project budget that runs out at about 40% of their work.
        p3_limit = Decimal(cfg.jobs) / 4 * expected_calls(4) * COST_PER_CALL * Decimal("0.4")
        app.set_project_budget("p3", max_cost_usd=str(p3_limit.quantize(Decimal("0.000001"))))
        for p in PROJECTS[:3]:
            app.set_project_budget(p, max_cost_usd="10")
        upfront = int(cfg.jobs * 0.4)
        pending_signals: dict[int, float] = {}
        signals_sent = 0
        reruns = Reruns(app, rng, out, fork_share=cfg.fork_share, retry_share=cfg.retry_share)

        def submit(specs: list[dict[str, Any]], deadline: float) -> list[int]:
            for spec in specs:
                reruns.prepare(spec)
            new = _submit(app, specs, deadline)
            for spec, job_id in zip(specs, new):
                reruns.submitted(spec, job_id)
                if spec["type"] == "chaos_approval" and rng.random() < 0.7:
                    pending_signals[job_id] = time.monotonic() + rng.uniform(0.0, 4.0)
            return new
        ids = submit(_job_specs(cfg, rng, 0, upfront), time.monotonic() + 60)
        submitted = upfront
        workers = Workers(url, cfg, env, out)
        started = time.monotonic()
        chaos_end = started + cfg.minutes * 60
        next_kill = started + cfg.kill_every * rng.uniform(0.5, 1.5)
        trickle_every = max(1.0, cfg.minutes * 60 * 0.8 / max(1, (cfg.jobs - upfront) / 10))
        next_trickle = started + trickle_every
        pg_restart_at = started + cfg.minutes * 60 * 0.4
        pg_restarts = 0
        _say(cfg, f"chaos on {cfg.backend}: {cfg.workers} workers x {cfg.concurrency}, "
                  f"{cfg.jobs} jobs, a kill every ~{cfg.kill_every:g}s for {cfg.minutes:g} min "
                  f"(files in {out})")
        while time.monotonic() < chaos_end:
            now = time.monotonic()
            workers.tend()
            if now >= next_kill:
                workers.kill_one(rng)
                next_kill = now + cfg.kill_every * rng.uniform(0.5, 1.5)
            if now >= next_trickle and submitted < cfg.jobs:
                n = min(10, cfg.jobs - submitted)
                ids += submit(_job_specs(cfg, rng, submitted, n), now + 120)
                submitted += n
                next_trickle = now + trickle_every
            signals_sent += _signal_some(app, rng, pending_signals)
            reruns.step()
            if server is not None and cfg.pg_restart and not pg_restarts and now >= pg_restart_at:
                _say(cfg, "crashing and restarting the private PostgreSQL server")
                server.stop("immediate")
                time.sleep(1.0)
                server.start()
                pg_restarts += 1
            time.sleep(0.05)
        if submitted < cfg.jobs:
            ids += submit(_job_specs(cfg, rng, submitted, cfg.jobs - submitted),
                          time.monotonic() + 120)
        chaos_s = time.monotonic() - started
        _say(cfg, f"{workers.kills} kills in {chaos_s:.0f}s; draining")
        drain_deadline = time.monotonic() + cfg.drain_timeout
        while (reruns.busy or not _settled(app)) and time.monotonic() < drain_deadline:
            workers.tend()
            signals_sent += _signal_some(app, rng, pending_signals)
            reruns.step()
            time.sleep(0.5)
        drained = not reruns.busy and _settled(app)
        stats.update(minutes=round(chaos_s / 60, 2), jobs=len(ids), kills=workers.kills,
                     worker_exits_unasked=len(workers.unexpected_exits),
                     pg_restarts=pg_restarts, drain_s=round(time.monotonic() - started - chaos_s, 1),
                     drained=drained)
        codes = workers.stop()
        workers = None
        stats["worker_exit_codes"] = dict(Counter(codes))
        jobs = all_jobs(app)
        children = [j.id for j in jobs if j.parent_id is not None]
        checks = run_checks(app, expected_ids=ids + children + reruns.forks, bill_path=bill)
        billed = read_bill(bill)
        stats.update(
            states=dict(Counter(str(j.state) for j in jobs)),
            error_codes=dict(Counter(j.error_code for j in jobs if j.error_code)),
            attempts=sum(j.attempt_count for j in jobs),
            workflows=dict(Counter(j.type for j in jobs if j.type != "chaos_pipeline")),
            children=len(children), signals_sent=signals_sent, forks=len(reruns.forks),
            retries_from_stage=reruns.retries,
            calls_carried=sum(1 for j in reruns.forks for r in app.store.ledger(j)
                              if r.reused_from is not None),
            calls_repaid=sum(1 for j in jobs for e in app.store.events(j.id, limit=100_000)
                             if e.kind == "call_repaid"),
            attempts_lost_to_kills=sum(1 for j in jobs for a in app.store.attempts(j.id)
                                       if a.outcome == "lease_expired"),
            billed_calls=len(billed), billed_usd=str(sum((b.cost_usd for b in billed),
                                                         Decimal(0))),
            ledger_usd=str(sum((r.cost_usd for j in jobs for r in app.store.ledger(j.id)),
                               Decimal(0))))
        if not drained:
            checks.insert(0, Check("drained before the deadline", False,
                                   f"{cfg.drain_timeout:g}s", ["jobs still unsettled"]))
        return Result(checks, stats)
    finally:
        if workers is not None:
            workers.stop()
        app.close()
        if server is not None:
            server.__exit__(None, None, None)


def report(result: Result) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    summary = Table(title="chaos run")
    summary.add_column("figure")
    summary.add_column("value")
    for k, v in result.stats.items():
        summary.add_row(k, str(v))
    console.print(summary)
    console.print(render(result.checks, title="invariants"))
    console.print("[green]all invariants held[/]" if result.ok else "[red]INVARIANTS FAILED[/]")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/chaos.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=2.0)
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--kill-every", type=float, default=3.0, help="seconds between SIGKILLs")
    p.add_argument("--lease-ttl", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--transient", type=float, default=0.03, help="rate of simulated 429s")
    p.add_argument("--refusal", type=float, default=0.004, help="rate of simulated refusals")
    p.add_argument("--workflow-share", type=float, default=0.2,
                   help="share of jobs that are fan-out parents or signal waiters")
    p.add_argument("--fork-share", type=float, default=0.1,
                   help="share of pipelines forked from a random stage")
    p.add_argument("--retry-share", type=float, default=0.08,
                   help="share of pipelines failed in review and retried from a stage")
    p.add_argument("--no-pg-restart", action="store_true")
    p.add_argument("--drain-timeout", type=float, default=300.0)
    p.add_argument("--out", type=Path, default=None, help="folder for the database, bill, logs")
    a = p.parse_args(argv)
    cfg = Config(minutes=a.minutes, backend=a.backend, jobs=a.jobs, workers=a.workers,
                 concurrency=a.concurrency, kill_every=a.kill_every, lease_ttl=a.lease_ttl,
                 seed=a.seed, transient=a.transient, refusal=a.refusal,
                 workflow_share=a.workflow_share, fork_share=a.fork_share,
                 retry_share=a.retry_share, pg_restart=not a.no_pg_restart,
                 drain_timeout=a.drain_timeout, out=a.out)
    try:
        result = run(cfg)
    except (StoreError, OSError, subprocess.CalledProcessError) as exc:
        print(f"chaos run could not run: {exc}", file=sys.stderr)
        return 2
    report(result)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
