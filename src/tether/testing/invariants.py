"""Invariants that must hold after any run, however it was abused.

Shared by the chaos runner (``bench/chaos.py``) and the test suite: each function reads the
store (and, when given, the simulated provider's own bill) and returns the problems it found.
An empty list means the promise held. Nothing here writes.

* ``history_problems``  one job: events gap-free (seq 1..n), a valid path through the state
  machine that ends in the job's state, terminal states absorbing, attempts consistent with
  the events (one ``leased`` event per attempt, the open attempt is the lease held).
* ``run_checks``        a whole run: every job settled, none lost, no call paid twice without an
  unconfirmed ledger row (or, between the payments, the call's ``call_repaid`` event: a call
  an operator or its job type chose to pay again, by a retry from a stage or a replay), bill
  within every job (with its children) and project budget, ledger >= bill, every job's
  history, and every wait woken at most once. ``render`` prints them as a table.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

from ..core.states import LEASED_STATES, TERMINAL, TRANSITIONS, JobState
from ..records import Attempt, Event, Job

S = JobState
ABSORBING = frozenset({S.SUCCEEDED, S.CANCELLED})
"""Terminal states nothing may leave (``failed`` leaves only by an explicit retry or requeue)."""
EXPLICIT_FROM_FAILED = frozenset({"retry", "requeue"})


def history_problems(job: Job, events: Sequence[Event], attempts: Sequence[Attempt]) -> list[str]:
    """Everything wrong with one job's event log and attempt records (empty: consistent)."""
    where = f"job {job.id}"
    out: list[str] = []
    seqs = [e.seq for e in events]
    if seqs != list(range(1, len(events) + 1)):
        out.append(f"{where}: event seqs are not 1..{len(events)} (gap or repeat): {seqs}")
    if not events:
        return [*out, f"{where}: has no events at all"]
    first = events[0]
    if first.kind != "submitted" or first.from_state is not None or first.to_state != S.QUEUED:
        out.append(f"{where}: first event is {first.kind} {first.from_state}->{first.to_state}, "
                   "not submitted ->queued")
    state: str = S.QUEUED
    leased_attempts: list[int | None] = []
    cancelling_seen = False
    for e in events[1:]:
        if e.to_state is None:
            if e.from_state is not None:
                out.append(f"{where}: event {e.seq} ({e.kind}) has a from_state but no to_state")
            continue
        src, dst = e.from_state, e.to_state
        if src != state:
            out.append(f"{where}: event {e.seq} ({e.kind}) moves from {src} "
                       f"but the job was {state}")
        try:
            src_s, dst_s = S(src), S(dst)  # type: ignore[arg-type]  # None: ValueError
        except ValueError:
            out.append(f"{where}: event {e.seq} names an unknown state {src}->{dst}")
            state = dst
            continue
        if dst_s not in TRANSITIONS[src_s]:
            out.append(f"{where}: event {e.seq} ({e.kind}) {src}->{dst} "
                       "is not in the state machine")
        if src_s in ABSORBING:
            out.append(f"{where}: event {e.seq} leaves the terminal state {src}")
        if src_s == S.FAILED and e.kind not in EXPLICIT_FROM_FAILED:
            out.append(f"{where}: event {e.seq} ({e.kind}) leaves failed without an explicit retry")
        if cancelling_seen and dst_s != S.CANCELLED:
            out.append(f"{where}: event {e.seq} moves a cancelling job to {dst}, not cancelled")
        cancelling_seen = dst_s == S.CANCELLING
        if dst_s == S.LEASED:
            leased_attempts.append(e.attempt)
        state = dst_s
    if state != job.state:
        out.append(f"{where}: events end in {state} but the job is {job.state}")

    numbers = [a.attempt for a in attempts]
    if numbers != list(range(1, len(attempts) + 1)):
        out.append(f"{where}: attempt numbers are {numbers}, not 1..{len(attempts)}")
    if len(attempts) != job.attempt_count:
        out.append(f"{where}: {len(attempts)} attempt records "
                   f"but attempt_count={job.attempt_count}")
    if len(leased_attempts) != len(attempts):
        out.append(f"{where}: {len(leased_attempts)} leased events but {len(attempts)} attempts")
    elif leased_attempts != numbers:
        out.append(f"{where}: leased events name attempts {leased_attempts}, records {numbers}")
    holds = job.state in LEASED_STATES
    if holds != (job.lease_attempt is not None):
        out.append(f"{where}: state {job.state} but lease_attempt={job.lease_attempt}")
    open_ = [a.attempt for a in attempts if a.finished_at is None]
    expected_open = [job.lease_attempt] if job.lease_attempt is not None else []
    if open_ != expected_open:
        out.append(f"{where}: open attempts {open_}, but the lease held is {expected_open}")
    expired_events = sum(1 for e in events if e.kind == "lease_expired")
    expired_attempts = sum(1 for a in attempts if a.outcome == "lease_expired")
    if expired_events != expired_attempts:
        out.append(f"{where}: {expired_events} lease_expired events but {expired_attempts} "
                   "attempts ended by lease expiry")
    if job.state in TERMINAL and job.finished_at is None:
        out.append(f"{where}: {job.state} without finished_at")
    return out


@dataclass
class Check:
    """One invariant over a run: did it hold, the figures behind it, and what broke it."""

    name: str
    ok: bool
    figures: str
    problems: list[str] = field(default_factory=list)


def repaid_on_purpose(confirmed: Sequence[Any], events: Sequence[Event], key: str) -> bool:
    """Whether each confirmed ledger row of call ``key`` after the first follows a
    ``call_repaid`` event of ``key``: the one record of a key paid again on purpose (a replay
    found the call changed and it was to be paid again, ``job/replay.py``; or a retry from a
    stage dropped its answer, ``store/forks.py``), one event per repeat. Any other repeat is a
    call paid twice."""
    repaid = iter(sorted(e.at for e in events
                         if e.kind == "call_repaid" and e.data.get("key") == key))
    paid = sorted(r.created_at for r in confirmed)
    for a, b in pairwise(paid):  # each repeat needs an event of its own
        t = next((t for t in repaid if t >= a), None)
        if t is None or t > b:
            return False
    return True


def _check(name: str, problems: list[str], figures: str) -> Check:
    return Check(name, not problems, figures, problems)


def all_jobs(app: Any) -> list[Job]:
    jobs: list[Job] = []
    before = None
    while True:
        page = app.store.list_jobs(before_id=before, limit=1000)
        jobs.extend(page)
        if len(page) < 1000:
            return sorted(jobs, key=lambda j: j.id)
        before = page[-1].id


def run_checks(app: Any, *, expected_ids: Iterable[int] | None = None,
               bill_path: str | Path | None = None,
               settled_ok: Iterable[str] = ("budget_exhausted",)) -> list[Check]:
    """Every invariant of a finished run. ``expected_ids``: the jobs the run submitted;
    ``bill_path``: the simulated provider's bill; ``settled_ok``: error codes that make a
    ``paused`` job count as settled (a budget stop waits for an operator)."""
    from ..providers.simulated import read_bill

    jobs = all_jobs(app)
    by_id = {j.id: j for j in jobs}
    checks: list[Check] = []
    settled_codes = set(settled_ok)

    # 1. every job terminal, or paused for budget
    unsettled = [f"job {j.id} is {j.state} ({j.error_code})" for j in jobs
                 if not (j.state in TERMINAL or (j.state == S.PAUSED
                                                 and j.error_code in settled_codes))]
    states = Counter(str(j.state) for j in jobs)
    paused_budget = sum(1 for j in jobs if j.state == S.PAUSED and j.error_code in settled_codes)
    checks.append(_check("every job terminal or paused for budget", unsettled,
                         ", ".join(f"{k} {v}" for k, v in sorted(states.items()))
                         + (f" (budget-paused {paused_budget})" if paused_budget else "")))

    # 2. no job lost
    if expected_ids is not None:
        expected = set(expected_ids)
        lost = sorted(expected - set(by_id))
        extra = sorted(set(by_id) - expected)
        problems = [f"job {i} was submitted but is gone" for i in lost]
        problems += [f"job {i} exists but was never submitted" for i in extra]
        checks.append(_check("no job lost", problems,
                             f"{len(expected)} submitted, {len(by_id)} in the store"))

    ledgers = {j.id: app.store.ledger(j.id) for j in jobs}
    histories = {j.id: app.store.events(j.id, limit=100_000) for j in jobs}
    ledger_total = sum((r.cost_usd for rows in ledgers.values() for r in rows), Decimal(0))
    if bill_path is not None:
        bill = read_bill(bill_path)
        per_key: dict[tuple[int | None, str], int] = Counter((b.job_id, b.key) for b in bill)
        rows_per_key: dict[tuple[int, str], list[Any]] = defaultdict(list)
        for jid, rows in ledgers.items():
            for r in rows:
                rows_per_key[(jid, r.key)].append(r)
        problems = []
        repeats = unconfirmed = 0
        for (job_id, key), n in sorted(per_key.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1])):
            rows = rows_per_key.get((job_id, key), [])  # type: ignore[arg-type]
            confirmed = sum(1 for r in rows if r.confirmed)
            unconf = len(rows) - confirmed
            unconfirmed += unconf
            if n > 1:
                repeats += 1
            if job_id not in by_id:
                problems.append(f"the bill names call {key!r} of unknown job {job_id}")
            elif confirmed > 1 and not repaid_on_purpose(
                    [r for r in rows if r.confirmed], histories[job_id], key):
                problems.append(f"job {job_id} call {key!r}: {confirmed} confirmed ledger rows")
            elif n > confirmed and unconf == 0:
                problems.append(f"job {job_id} call {key!r} billed {n} times, no unconfirmed row")
            elif n > len(rows):
                problems.append(f"job {job_id} call {key!r} billed {n} times, "
                                f"only {len(rows)} ledger rows")
        checks.append(_check(
            "each call billed at most once (unless unconfirmed)", problems,
            f"{len(bill)} billed calls, {len(per_key)} keys, {repeats} billed twice, "
            f"{unconfirmed} unconfirmed rows"))

        billed_by_job: dict[int | None, Decimal] = defaultdict(Decimal)
        for b in bill:
            billed_by_job[b.job_id] += b.cost_usd
        problems = []
        limited = 0
        billed_tree = _tree_totals(jobs, billed_by_job)
        for j in jobs:
            limit = j.budget.limits.max_cost_usd
            if limit is None:
                continue
            limited += 1
            if billed_tree.get(j.id, Decimal(0)) > limit:
                problems.append(f"job {j.id}: billed ${billed_tree[j.id]} (with its children's) "
                                f"> limit ${limit}")
            if j.budget.used.spent_usd > limit:
                problems.append(f"job {j.id}: spent ${j.budget.used.spent_usd} > limit ${limit}")
            max_calls = j.budget.limits.max_calls
            if max_calls is not None and j.budget.used.calls > max_calls:
                problems.append(f"job {j.id}: {j.budget.used.calls} calls > limit {max_calls}")
        projects = sorted({j.project for j in jobs})
        project_limited = 0
        for p in projects:
            status = app.project_budget(p)
            limit = status.limits.max_cost_usd
            if limit is None:
                continue
            project_limited += 1
            billed = sum((billed_by_job.get(j.id, Decimal(0)) for j in jobs if j.project == p),
                         Decimal(0))
            if billed > limit:
                problems.append(f"project {p}: billed ${billed} > limit ${limit}")
            if status.used.spent_usd > limit:
                problems.append(f"project {p}: spent ${status.used.spent_usd} > limit ${limit}")
        bill_total = sum(billed_by_job.values(), Decimal(0))
        checks.append(_check("billed total within every job and project budget", problems,
                             f"${bill_total} billed; {limited} job limits, "
                             f"{project_limited} project limits"))

        problems = []
        for j in jobs:
            led = sum((r.cost_usd for r in ledgers[j.id]), Decimal(0))
            if led < billed_by_job.get(j.id, Decimal(0)):
                problems.append(f"job {j.id}: ledger ${led} < billed ${billed_by_job[j.id]}")
            if j.budget.used.spent_usd < led:
                problems.append(f"job {j.id}: spent ${j.budget.used.spent_usd} < ledger ${led}")
        if ledger_total < bill_total:
            problems.append(f"ledger total ${ledger_total} < billed total ${bill_total}")
        checks.append(_check("ledger total >= billed total", problems,
                             f"ledger ${ledger_total} >= billed ${bill_total}"))

    problems = []
    n_events = n_attempts = 0
    for j in jobs:
        events = histories[j.id]
        attempts = app.store.attempts(j.id)
        n_events += len(events)
        n_attempts += len(attempts)
        problems.extend(history_problems(j, events, attempts))
    checks.append(_check("events gap-free, valid paths; attempts match events", problems,
                         f"{len(jobs)} jobs, {n_events} events, {n_attempts} attempts"))

    problems = []
    n_waits = n_woken = 0
    for j in jobs:
        waits = app.store.waits(j.id)
        if not waits:
            continue
        done = [w for w in waits if w.done]
        n_waits += len(waits)
        woken = sum(1 for e in histories[j.id] if e.kind == "woken")
        n_woken += woken
        if woken > len(done):
            problems.append(f"job {j.id}: woken {woken} times for {len(done)} satisfied waits")
        for w in done:
            if w.kind == "children" and w.outcome != "child_failed":
                open_children = [c for c in w.children
                                 if c in by_id and by_id[c].state not in TERMINAL]
                if open_children:
                    problems.append(f"job {j.id}: gather {w.key} done before children "
                                    f"{open_children} finished")
    checks.append(_check("each wait woke its job at most once, gathers after their children",
                         problems, f"{n_waits} waits, {n_woken} wake-ups"))
    return checks


def _tree_totals(jobs: Sequence[Job], own: dict[int | None, Decimal]) -> dict[int, Decimal]:
    """Each job's own amount plus its descendants' (a child's spend counts against its
    ancestors' limits)."""
    totals: dict[int, Decimal] = defaultdict(Decimal)
    parent_of = {j.id: j.parent_id for j in jobs}
    for j in jobs:
        amount = own.get(j.id, Decimal(0))
        at: int | None = j.id
        seen = 0
        while at is not None and seen < 64:
            totals[at] += amount
            at = parent_of.get(at)
            seen += 1
    return totals


def failed(checks: Sequence[Check]) -> list[Check]:
    return [c for c in checks if not c.ok]


def render(checks: Sequence[Check], *, title: str = "invariants", max_problems: int = 5) -> Any:
    """A rich Table of the checks (problems listed under a failed one)."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("invariant")
    table.add_column("result")
    table.add_column("figures")
    for c in checks:
        detail = c.figures
        if c.problems:
            shown = c.problems[:max_problems]
            more = len(c.problems) - len(shown)
            detail += ("\n" + "\n".join(f"- {p}" for p in shown)
                       + (f"\n(+{more} more)" if more else ""))
        table.add_row(c.name, "[green]ok[/]" if c.ok else "[red]FAILED[/]", detail)
    return table


def describe(checks: Sequence[Check]) -> str:
    """Plain text of the failed checks, for assertion messages."""
    return "\n".join(f"{c.name}: {c.figures}\n  " + "\n  ".join(c.problems[:20])
                     for c in failed(checks))
