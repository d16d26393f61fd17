"""The worker's job threads: jobs run in the order handed over, at most ``size`` at once,
every job handed over runs before ``close`` returns, and a run that raises costs no slot."""

from __future__ import annotations

import threading

import pytest

from tether.worker.slots import Slots


def test_jobs_run_in_order_and_close_runs_everything_handed_over():
    ran: list[int] = []
    slots: Slots[int] = Slots(1, ran.append)
    slots.put_many(range(50))
    slots.put_many([50, 51])
    slots.close()
    assert ran == list(range(52))
    with pytest.raises(RuntimeError):
        slots.put_many([1])


def test_at_most_size_jobs_run_at_once_and_the_rest_wait():
    gate = threading.Event()
    started = threading.Semaphore(0)
    running, most = [0], [0]
    lock = threading.Lock()

    def run(_: int) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        started.release()
        gate.wait(30)
        with lock:
            running[0] -= 1

    slots: Slots[int] = Slots(3, run)
    slots.put_many(range(7))
    for _ in range(3):
        assert started.acquire(timeout=30)
    assert slots.waiting == 4
    gate.set()
    slots.close()
    assert most[0] == 3 and running[0] == 0 and slots.waiting == 0


def test_a_run_that_raises_does_not_cost_a_slot():
    ran: list[int] = []

    def run(n: int) -> None:
        if n == 0:
            raise SystemExit("job code called exit")
        ran.append(n)

    slots: Slots[int] = Slots(1, run)
    slots.put_many([0, 1, 2])
    slots.close()
    assert ran == [1, 2]
