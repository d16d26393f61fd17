"""A model-based test of the store against DESIGN §2, on every backend.

A hypothesis ``RuleBasedStateMachine`` drives the store API (the calls workers, the rescuer and
operators make) in random order, with random clock jumps, and keeps a small in-memory model of
what DESIGN §2 and §6 say must happen. The model is written from the design, not from the
store's code: claim order, lease expiry, finish-after-cancel, operator actions, attempt
counting. After every step the store must agree with the model, every job's event log must be
gap-free and a valid path through the transition table (``tether.testing.invariants``), terminal
states must absorb, and no job may be lost. Stale stale lease attempts ("zombie" writes) must change
nothing.

Hypothesis and function-scoped fixtures do not mix, so each example builds its own store: a
fresh SQLite file, or a fresh schema on the shared PostgreSQL server.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test,
)

from tether import FakeClock, IdempotencyConflict, JobStateError, LeaseLost
from tether.errors import StoreError
from tether.core.budget import Budget
from tether.core.states import TERMINAL, JobState
from tether.core.waits import WaitSpec
from tether.store.base import NewJob, Outcome
from tether.store.flow import PRIORITY_AGING_S
from tether.store.open import open_store
from tether.testing.invariants import history_problems
from tests.conftest import PG_URL, require_postgres

S = JobState
TTL = 30.0
MAX_JOBS = 10
ELAPSE = st.sampled_from([0.0, 0.0, 0.0, 0.5, 1.0, 5.0, 29.0, 30.0, 31.0, 61.0])
SMALL = st.sampled_from([0.0, 0.0, 0.5, 1.0, 5.0])  # worker steps: a live worker is quick
WORKERS = ("w1", "w2", "w3")
QUEUES = ("a", "b")
KEYS = ("k1", "k2", "k3", "k4")
HOLDING = {S.LEASED, S.RUNNING, S.PAUSING, S.CANCELLING}

# The lifecycle as docs/design.md first states it; the engine's table adds edges (the
# "Extra transitions" there) but must contain every one of these.
DESIGN_EDGES = {
    (S.QUEUED, S.LEASED), (S.LEASED, S.RUNNING), (S.LEASED, S.QUEUED),
    (S.RUNNING, S.SUCCEEDED), (S.RUNNING, S.FAILED), (S.RUNNING, S.RETRY_WAIT),
    (S.RETRY_WAIT, S.QUEUED), (S.RUNNING, S.PAUSING), (S.PAUSING, S.PAUSED),
    (S.PAUSED, S.QUEUED), (S.RUNNING, S.CANCELLING), (S.CANCELLING, S.CANCELLED),
    (S.RUNNING, S.QUEUED), (S.RUNNING, S.INTERRUPTED), (S.INTERRUPTED, S.QUEUED),
    (S.INTERRUPTED, S.CANCELLED), (S.FAILED, S.QUEUED), (S.QUEUED, S.CANCELLED),
    (S.RETRY_WAIT, S.CANCELLED), (S.PAUSED, S.CANCELLED),
}


def aged(priority: int, waited: float) -> int:
    """docs/flow-control.md, "Aging": one level better per PRIORITY_AGING_S waited. One
    project here, so the fair order is (aged priority, run_after, id)."""
    return priority - math.floor(waited / PRIORITY_AGING_S)


def test_design_edges_are_in_the_engine_table():
    from tether.core.states import TRANSITIONS
    missing = {(a, b) for a, b in DESIGN_EDGES if b not in TRANSITIONS[a]}
    assert not missing


def pg_store(clock: FakeClock):
    """A store on a fresh schema of the shared server. The server is shared with other test
    runs, so a momentary "too many clients" is waited out rather than failing the example."""
    import time

    import psycopg

    from tests.pg import fresh_schema_url
    deadline = time.monotonic() + 60
    while True:
        try:
            url = fresh_schema_url(PG_URL, f"m_{uuid.uuid4().hex[:12]}")
            return open_store(url, clock=clock, min_size=1, max_size=2)
        except (psycopg.OperationalError, StoreError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


# --- the model ----------------------------------------------------------------------------------

@dataclass
class MJob:
    id: int
    queue: str
    priority: int
    safe: bool
    max_attempts: int
    run_after: float
    key: str | None = None
    variant: int = 0
    state: S = S.QUEUED
    attempt_count: int = 0
    lease_owner: str | None = None
    lease_attempt: int | None = None
    lease_expires_at: float | None = None
    started: bool = False          # the holder of the current lease called start()
    error_code: str | None = None
    transitions: int = 1           # the submit event counts as the first
    owners: list[str] = field(default_factory=list)
    parent: int | None = None
    wait: dict | None = None       # the open wait the job is blocked on (kind, wake_at, ...)
    waits: int = 0                 # waits begun: each gets a fresh key
    mailbox: int = 0               # signals sent and not yet consumed

    def move(self, to: S) -> None:
        self.state = to
        self.transitions += 1
        if to not in HOLDING:
            self.lease_owner = self.lease_attempt = self.lease_expires_at = None
            self.started = False


def allowed(src: S, dst: S) -> bool:
    from tether.core.states import TRANSITIONS
    return dst in TRANSITIONS[src]


def operator_expect(action: str, cur: S) -> S | None:
    """Where an operator action sends a job, per DESIGN §2 and §1.5 (None: refused)."""
    if action == "cancel":
        if cur in (S.QUEUED, S.RETRY_WAIT, S.WAITING, S.PAUSED, S.INTERRUPTED):
            return S.CANCELLED
        if cur in (S.LEASED, S.RUNNING, S.PAUSING):
            return S.CANCELLING  # cooperative: the worker stops at a safe boundary
        return None
    if action == "pause":
        if cur in (S.QUEUED, S.RETRY_WAIT, S.WAITING):
            return S.PAUSED
        if cur in (S.LEASED, S.RUNNING):
            return S.PAUSING
        return None
    if action == "resume":
        return S.QUEUED if cur == S.PAUSED else None
    if action == "retry":
        return S.QUEUED if cur == S.FAILED else None
    if action == "requeue":
        return S.QUEUED if cur in (S.INTERRUPTED, S.PAUSED, S.FAILED) else None
    raise AssertionError(action)


def finish_expect(cur: S, want: S) -> S:
    """A worker's outcome given what operators did meanwhile: a recorded cancel always wins;
    a recorded pause turns 'try again later' into paused, but a finished result stands."""
    if cur == S.CANCELLING:
        return S.CANCELLED
    if cur == S.PAUSING and want in (S.RETRY_WAIT, S.QUEUED, S.WAITING, S.PAUSED):
        return S.PAUSED
    return want


def expiry_expect(job: MJob) -> tuple[S, str | None]:
    if job.state == S.CANCELLING:
        return S.CANCELLED, None
    if job.state == S.PAUSING:
        return S.PAUSED, None
    if job.attempt_count >= job.max_attempts:
        return S.FAILED, "interrupted"
    if job.state == S.LEASED or job.safe:
        return S.QUEUED, None
    return S.INTERRUPTED, "interrupted"


# --- the machine --------------------------------------------------------------------------------

class StoreModel(RuleBasedStateMachine):
    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.tmp = None
        if self.backend == "sqlite":
            self.tmp = tempfile.mkdtemp(prefix="tether-model-")
            url = f"sqlite:///{self.tmp}/t.db"
            self.store = open_store(url, clock=self.clock)
        else:
            self.store = pg_store(self.clock)
        self.jobs: dict[int, MJob] = {}
        self.paused_queues: set[str] = set()
        self.stale: list[tuple[int, int]] = []   # (job, token) pairs whose lease is gone
        self.hashes: dict[int, str] = {}

    def teardown(self) -> None:
        self.store.close()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # helpers
    @property
    def now(self) -> float:
        return self.clock.time()

    def pick(self, i: int, pred=lambda j: True) -> MJob | None:
        cands = [j for j in self.jobs.values() if pred(j)]
        return cands[i % len(cands)] if cands else None

    def release(self, job: MJob) -> None:
        if job.lease_attempt is not None:
            self.stale.append((job.id, job.lease_attempt))

    def assert_unchanged(self, before: dict) -> None:
        after = self.snapshot()
        assert after == before, "a refused operation changed the store"

    def snapshot(self) -> dict:
        return {j.id: (j.state, j.attempt_count, j.lease_attempt, len(self.store.events(j.id)))
                for j in self.store.list_jobs(limit=1000)}

    # --- submit ---------------------------------------------------------------------------------

    @precondition(lambda self: len(self.jobs) < MAX_JOBS)
    @rule(dt=ELAPSE, n=st.integers(1, 3), safe=st.booleans(), max_attempts=st.integers(1, 3),
          priority=st.integers(0, 2), queue=st.sampled_from(QUEUES),
          delay=st.sampled_from([None, None, 0.0, 5.0]),
          keyed=st.lists(st.one_of(st.none(), st.tuples(st.sampled_from(KEYS), st.integers(0, 1))),
                         min_size=3, max_size=3))
    def submit(self, dt, n, safe, max_attempts, priority, queue, delay, keyed):
        self.clock.advance(dt)
        specs = []
        for i in range(n):
            key, variant = keyed[i] or (None, 0)
            specs.append((NewJob(
                type="t", payload_json='{"n":%d}' % i, project="p", queue=queue,
                priority=priority, run_after=None if delay is None else self.now + delay,
                max_attempts=max_attempts, safe_to_retry=safe, idempotency_key=key,
                input_config_hash=f"{key}-{variant}" if key else uuid.uuid4().hex, budget=Budget()), key, variant))
        # Expected: keyed specs whose key exists with the same configuration return the
        # existing job; a different configuration refuses the whole batch (one transaction).
        by_key = {j.key: j for j in self.jobs.values() if j.key}
        fresh: dict[str, NewJob] = {}
        conflict = False
        for spec, key, _ in specs:
            if key is None:
                continue
            prior = by_key.get(key)
            prior_hash = None
            if prior is not None:
                prior_hash = self.hashes[prior.id]
            elif key in fresh:
                prior_hash = fresh[key].input_config_hash
            if prior_hash is not None and prior_hash != spec.input_config_hash:
                conflict = True
            fresh.setdefault(key, spec)
        before = self.snapshot()
        if conflict:
            with pytest.raises(IdempotencyConflict):
                self.store.submit([s for s, _, _ in specs])
            self.assert_unchanged(before)
            return
        results = self.store.submit([s for s, _, _ in specs])
        assert len(results) == len(specs)
        seen_keys: dict[str, int] = {}
        for (spec, key, variant), (job, created) in zip(specs, results):
            if key is not None and (key in by_key or key in seen_keys):
                expected_id = by_key[key].id if key in by_key else seen_keys[key]
                assert not created and job.id == expected_id, "same key, same job"
                continue
            assert created and job.id not in self.jobs
            self.jobs[job.id] = MJob(id=job.id, queue=queue, priority=priority, safe=safe,
                                     max_attempts=max_attempts, key=key, variant=variant,
                                     run_after=self.now if delay is None else self.now + delay)
            self.hashes[job.id] = spec.input_config_hash
            if key is not None:
                seen_keys[key] = job.id

    # --- worker side ----------------------------------------------------------------------------

    @precondition(lambda self: any(j.state == S.QUEUED for j in self.jobs.values()))
    @rule(dt=ELAPSE, worker=st.sampled_from(WORKERS), limit=st.integers(1, 3),
          queues=st.sampled_from([None, None, ("a",), ("b",), ("a", "b")]),
          start=st.booleans())
    def claim(self, dt, worker, limit, queues, start):
        """``start``: the claim also begins first attempts (a worker that runs them at once);
        a re-attempt stays leased, because its start must settle what the last attempt left."""
        self.clock.advance(dt)
        eligible = sorted(
            (j for j in self.jobs.values()
             if j.state == S.QUEUED and j.run_after <= self.now
             and (queues is None or j.queue in queues) and j.queue not in self.paused_queues),
            key=lambda j: (aged(j.priority, self.now - j.run_after), j.run_after, j.id)
        )[:limit]
        claims = self.store.claim(worker, queues=list(queues) if queues else None, limit=limit,
                                  lease_ttl=TTL, start=start)
        assert [c.job.id for c in claims] == [j.id for j in eligible], "deterministic claims"
        for c, j in zip(claims, eligible):
            assert j.attempt_count < j.max_attempts, "a queued job always has an attempt left"
            j.attempt_count += 1
            j.move(S.LEASED)
            j.lease_owner, j.lease_attempt = worker, j.attempt_count
            j.lease_expires_at = self.now + TTL
            j.owners.append(worker)
            assert c.attempt == j.attempt_count, "the lease attempt is the attempt number"
            if start and j.attempt_count == 1:
                j.move(S.RUNNING)
                j.started = True
            assert c.started == j.started and c.job.state == j.state

    @precondition(lambda self: any(j.lease_attempt for j in self.jobs.values()))
    @rule(dt=SMALL, i=st.integers(0, 99))
    def start(self, dt, i):
        self.clock.advance(dt)
        j = self.pick(i, lambda j: j.lease_attempt is not None)
        if j is None:
            return
        got = self.store.start(j.id, j.lease_attempt)
        if j.state == S.LEASED:
            assert got == S.RUNNING
            j.move(S.RUNNING)
        else:
            assert got == j.state, "start reports what an operator did first"
        j.started = True

    @precondition(lambda self: any(j.lease_attempt for j in self.jobs.values()))
    @rule(dt=SMALL, worker=st.sampled_from(WORKERS))
    def heartbeat(self, dt, worker):
        self.clock.advance(dt)
        renewed = self.store.heartbeat(worker, lease_ttl=TTL)
        mine = {j.id: (j.lease_attempt, j.state) for j in self.jobs.values()
                if j.lease_owner == worker}
        assert renewed == mine, "a heartbeat renews exactly the worker's leases"
        for j in self.jobs.values():
            if j.lease_owner == worker:
                j.lease_expires_at = self.now + TTL

    @precondition(lambda self: any(j.started for j in self.jobs.values()))
    @rule(dt=SMALL, i=st.integers(0, 99),
          want=st.sampled_from(["succeeded", "failed", "retry", "budget", "handback",
                                "signal"]),
          delay=st.sampled_from([0.0, 1.0, 7.5]))
    def finish(self, dt, i, want, delay):
        """The executor's outcomes; only after start() (the executor never finishes earlier).
        ``signal``: the worker saw the operator's cancel or pause and stops for it."""
        self.clock.advance(dt)
        j = self.pick(i, lambda j: j.started and j.lease_attempt is not None)
        if j is None:
            return
        if want == "signal":
            if j.state == S.CANCELLING:
                outcome = Outcome(S.CANCELLED, error_code="cancelled", kind="cancelled")
            elif j.state == S.PAUSING:
                outcome = Outcome(S.PAUSED, kind="paused")
            else:
                return
        elif want == "succeeded":
            outcome = Outcome(S.SUCCEEDED, result_json='{"ok":true}')
        elif want == "failed":
            outcome = Outcome(S.FAILED, error_code="boom", error_summary="bug")
        elif want == "retry" and j.lease_attempt < j.max_attempts:
            outcome = Outcome(S.RETRY_WAIT, error_code="transient", error_summary="429",
                              delay_s=delay)
        elif want == "retry":
            outcome = Outcome(S.FAILED, error_code="transient", error_summary="429")
        elif want == "budget":
            outcome = Outcome(S.PAUSED, error_code="budget_exhausted", error_summary="limit",
                              kind="budget_exhausted")
        else:
            outcome = Outcome(S.QUEUED, kind="handed_back")
        target = finish_expect(j.state, outcome.state)
        if not allowed(j.state, target):
            before = self.snapshot()
            with pytest.raises(JobStateError):
                self.store.finish(j.id, j.lease_attempt, outcome)
            self.assert_unchanged(before)
            return
        got = self.store.finish(j.id, j.lease_attempt, outcome)
        assert got == target
        self.release(j)
        j.move(target)
        self.ended(j)
        if target == S.RETRY_WAIT:
            j.run_after = self.now + delay
        if target == S.QUEUED:
            j.run_after = self.now
            j.max_attempts = max(j.max_attempts, j.attempt_count + 1)
        if target == S.SUCCEEDED:
            j.error_code = None
        elif target in (S.FAILED, S.RETRY_WAIT, S.PAUSED) and outcome.error_code:
            j.error_code = outcome.error_code

    @precondition(lambda self: self.stale)
    @rule(dt=SMALL, i=st.integers(0, 99), op=st.sampled_from(["start", "finish", "stage", "event",
                                                     "state"]))
    def zombie_write(self, dt, i, op):
        """A worker whose lease was taken back (or ended) may write nothing at all."""
        self.clock.advance(dt)
        job_id, attempt = self.stale[i % len(self.stale)]
        before = self.snapshot()
        with pytest.raises(LeaseLost):
            if op == "start":
                self.store.start(job_id, attempt)
            elif op == "finish":
                self.store.finish(job_id, attempt, Outcome(S.SUCCEEDED, result_json='"zombie"'))
            elif op == "stage":
                self.store.set_stage(job_id, attempt, "zombie")
            elif op == "event":
                self.store.append_event(job_id, "zombie", {}, attempt=attempt)
            else:
                self.store.lease_state(job_id, attempt)
        self.assert_unchanged(before)

    @precondition(lambda self: any(j.lease_attempt for j in self.jobs.values()))
    @rule(dt=SMALL, ops=st.lists(st.tuples(st.sampled_from(["start", "finish", "zombie"]),
                                           st.integers(0, 99)), min_size=2, max_size=4))
    def group_commit(self, dt, ops):
        """Worker writes sharing one commit (the worker's group committer): each write keeps
        its own outcome; a refused one (lost lease, invalid move) rolls back alone."""
        self.clock.advance(dt)
        with self.store.transaction():
            for op, i in ops:
                if op == "start":
                    self.start(0.0, i)
                elif op == "finish":
                    self.finish(0.0, i, "succeeded", 0.0)
                elif self.stale:
                    self.zombie_write(0.0, i, "finish")

    # --- time and the rescuer -------------------------------------------------------------------

    @precondition(lambda self: any(j.lease_attempt for j in self.jobs.values()))
    @rule(dt=ELAPSE)
    def expire(self, dt):
        self.clock.advance(dt)
        due = [j for j in self.jobs.values()
               if j.lease_attempt is not None and j.lease_expires_at < self.now]
        got = self.store.expire_leases()
        expected = {}
        for j in due:
            to, code = expiry_expect(j)
            expected[j.id] = to
            self.release(j)
            j.move(to)
            self.ended(j)
            if code:
                j.error_code = code
            if to == S.QUEUED:
                j.run_after = self.now
        assert dict(got) == expected and len(got) == len(expected)

    @precondition(lambda self: any(j.state == S.RETRY_WAIT for j in self.jobs.values()))
    @rule(dt=ELAPSE)
    def promote(self, dt):
        self.clock.advance(dt)
        due = [j for j in self.jobs.values() if j.state == S.RETRY_WAIT and j.run_after <= self.now]
        assert self.store.promote_due() == len(due)
        for j in due:
            j.move(S.QUEUED)

    # --- operators ------------------------------------------------------------------------------

    @precondition(lambda self: self.jobs)
    @rule(dt=ELAPSE, i=st.integers(0, 99),
          action=st.sampled_from(["cancel", "pause", "resume", "retry", "requeue"]))
    def control(self, dt, i, action):
        self.clock.advance(dt)
        j = self.pick(i)
        to = operator_expect(action, j.state)
        if to is None:
            before = self.snapshot()
            with pytest.raises(JobStateError):
                self.store.control(j.id, action)
            self.assert_unchanged(before)
            return
        got = self.store.control(j.id, action)
        assert got.state == to
        if to not in HOLDING:
            self.release(j)
        j.move(to)
        if action == "cancel":
            self.cancel_children(j)
        if to == S.QUEUED:
            j.run_after = self.now
            j.max_attempts = max(j.max_attempts, j.attempt_count + 1)
            j.error_code = None
        if to == S.CANCELLED:
            j.error_code = "cancelled"

    def cancel_children(self, parent: MJob) -> None:
        """DESIGN: a cancelled parent's live children are cancelled with it, recursively."""
        for c in sorted(self.jobs.values(), key=lambda c: c.id):
            if c.parent != parent.id or c.state in TERMINAL or c.state == S.CANCELLING:
                continue
            to = operator_expect("cancel", c.state)
            if to not in HOLDING:
                self.release(c)
            c.move(to)
            if to == S.CANCELLED:
                c.error_code = "cancelled"
            self.cancel_children(c)

    # --- waits: children, timers, signals (DESIGN §2: running -> waiting -> queued) -----------

    def satisfied(self, j: MJob, wait: dict) -> bool:
        if wait["kind"] == "timer":
            return self.now >= wait["wake_at"]
        if wait["kind"] == "signal":
            return j.mailbox > 0 or (wait["wake_at"] is not None
                                     and self.now >= wait["wake_at"])
        return all(self.jobs[c].state in TERMINAL for c in wait["children"])

    def consume(self, j: MJob, wait: dict) -> None:
        if wait["kind"] == "signal" and j.mailbox > 0:
            j.mailbox -= 1

    def wake(self, j: MJob) -> None:
        self.consume(j, j.wait)
        j.wait = None
        j.move(S.QUEUED)
        j.run_after = self.now

    def ended(self, child: MJob) -> None:
        """A child reached a terminal state: its waiting parent's current wait is decided in
        that transaction (all it gathers done, or any other wait already satisfied)."""
        if child.state not in TERMINAL or child.parent is None:
            return
        parent = self.jobs[child.parent]
        if parent.state == S.WAITING and parent.wait and self.satisfied(parent, parent.wait):
            self.wake(parent)

    @precondition(lambda self: len(self.jobs) < MAX_JOBS
                  and any(j.started and j.lease_attempt for j in self.jobs.values()))
    @rule(dt=SMALL, i=st.integers(0, 99), n=st.integers(1, 2))
    def spawn(self, dt, i, n):
        """A running job enqueues children (their parent is the job)."""
        self.clock.advance(dt)
        j = self.pick(i, lambda j: j.started and j.lease_attempt is not None)
        results = self.store.submit([NewJob(
            type="t", payload_json="{}", project="p", queue="a", priority=0, run_after=None,
            max_attempts=2, safe_to_retry=True, idempotency_key=None,
            input_config_hash=uuid.uuid4().hex, parent_id=j.id) for _ in range(n)])
        for job, created in results:
            assert created
            self.jobs[job.id] = MJob(id=job.id, queue="a", priority=0, safe=True,
                                     max_attempts=2, run_after=self.now, parent=j.id)
            self.hashes[job.id] = "child"

    @precondition(lambda self: any(j.started and j.lease_attempt for j in self.jobs.values()))
    @rule(dt=SMALL, i=st.integers(0, 99), kind=st.sampled_from(["timer", "signal", "children"]),
          delay=st.sampled_from([None, 0.0, 10.0, 40.0]))
    def begin_wait(self, dt, i, kind, delay):
        """Job code waits: the wait is recorded under the lease and decided at once; an open
        one ends the attempt as waiting (no lease), a satisfied one lets the job run on."""
        self.clock.advance(dt)
        j = self.pick(i, lambda j: j.started and j.lease_attempt is not None)
        if j is None:
            return
        j.waits += 1
        children = tuple(sorted(c.id for c in self.jobs.values() if c.parent == j.id))
        if kind == "timer":
            delay = 0.0 if delay is None else delay
        wait = {"kind": kind, "children": children,
                "wake_at": None if delay is None or kind == "children" else self.now + delay}
        spec = WaitSpec(key=f"{kind}:{j.waits}", kind=kind, children=children,
                        fail_mode="collect", signal="go" if kind == "signal" else None,
                        delay_s=None if kind == "children" else delay)
        if kind == "timer" and delay is None:
            spec = WaitSpec(key=spec.key, kind=kind, delay_s=0.0)
        now_done = self.satisfied(j, wait)
        got = self.store.begin_wait(j.id, j.lease_attempt, spec)
        assert got.done == now_done, f"job {j.id}: {kind} wait decided {got.done}, not {now_done}"
        if now_done:
            self.consume(j, wait)
            return
        target = finish_expect(j.state, S.WAITING)
        got_state = self.store.finish(j.id, j.lease_attempt, Outcome(S.WAITING, kind="waiting"))
        assert got_state == target
        self.release(j)
        j.wait = wait
        if j.state == S.RUNNING:  # parked: the attempt does not use up a retry
            j.max_attempts = max(j.max_attempts, j.attempt_count) + 1
        j.move(target)
        if target == S.WAITING:
            j.run_after = wait["wake_at"] if wait["wake_at"] is not None else self.now + 300.0
        self.ended(j)

    @precondition(lambda self: self.jobs)
    @rule(dt=ELAPSE, i=st.integers(0, 99))
    def signal(self, dt, i):
        """An operator signals a job: kept in its mailbox; a job waiting for it wakes now."""
        self.clock.advance(dt)
        j = self.pick(i)
        if j.state in TERMINAL:
            before = self.snapshot()
            with pytest.raises(JobStateError):
                self.store.send_signal(j.id, "go", {"n": 1})
            self.assert_unchanged(before)
            return
        self.store.send_signal(j.id, "go", {"n": 1})
        j.mailbox += 1
        # The signal's transaction decides the job's current wait, whatever it waits for: a
        # timer that is already due wakes here as well as in the sweep.
        if j.state == S.WAITING and j.wait and self.satisfied(j, j.wait):
            self.wake(j)

    @precondition(lambda self: any(j.state == S.WAITING for j in self.jobs.values()))
    @rule(dt=ELAPSE)
    def wake_due(self, dt):
        """The sweep: waiting jobs whose recheck time came are decided again."""
        self.clock.advance(dt)
        woken = 0
        for j in sorted(self.jobs.values(), key=lambda j: j.id):
            if j.state != S.WAITING or j.run_after > self.now:
                continue
            if self.satisfied(j, j.wait):
                self.wake(j)
                woken += 1
            else:
                j.run_after = (j.wait["wake_at"] if j.wait["wake_at"] is not None
                               else self.now + 300.0)
        assert self.store.wake_due() == woken

    @precondition(lambda self: self.jobs)
    @rule(dt=ELAPSE, queue=st.sampled_from(QUEUES), paused=st.booleans())
    def pause_queue(self, dt, queue, paused):
        self.clock.advance(dt)
        self.store.set_queue_paused(queue, paused)
        (self.paused_queues.add if paused else self.paused_queues.discard)(queue)

    # --- invariants -----------------------------------------------------------------------------

    @invariant()
    def store_matches_model(self):
        stored = {j.id: j for j in self.store.list_jobs(limit=1000)}
        assert set(stored) == set(self.jobs), "no job lost, none invented"
        for m in self.jobs.values():
            j = stored[m.id]
            where = f"job {m.id}"
            assert j.state == m.state, f"{where}: store {j.state}, model {m.state}"
            assert j.attempt_count == m.attempt_count, where
            assert j.max_attempts == m.max_attempts, where
            assert j.lease_owner == m.lease_owner and j.lease_attempt == m.lease_attempt, where
            if m.lease_expires_at is None:
                assert j.lease_expires_at is None, where
            else:
                assert j.lease_expires_at.timestamp() == pytest.approx(m.lease_expires_at), where
            if m.state in (S.QUEUED, S.RETRY_WAIT, S.WAITING):
                assert j.run_after.timestamp() == pytest.approx(m.run_after), where
            if m.error_code in ("interrupted", "cancelled", "budget_exhausted") or \
                    m.state == S.SUCCEEDED:
                assert j.error_code == m.error_code, f"{where}: {j.error_code} != {m.error_code}"
            events = self.store.events(m.id)
            attempts = self.store.attempts(m.id)
            problems = history_problems(j, events, attempts)
            assert not problems, "\n".join(problems)
            moves = [e for e in events if e.to_state is not None]
            assert len(moves) == m.transitions, f"{where}: a transition was lost or invented"
            assert [a.worker_id for a in attempts] == m.owners, where


SETTINGS = settings(max_examples=40, stateful_step_count=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.filter_too_much])


class SQLiteModel(StoreModel):
    backend = "sqlite"


class PostgresModel(StoreModel):
    backend = "postgres"


def test_store_follows_the_model_on_sqlite():
    run_state_machine_as_test(SQLiteModel, settings=SETTINGS)


@pytest.mark.postgres
def test_store_follows_the_model_on_postgres():
    require_postgres()
    run_state_machine_as_test(PostgresModel, settings=settings(SETTINGS, max_examples=20))
