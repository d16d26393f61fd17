"""CallBatcher: concurrent calls of one job share writes; each op keeps its own outcome."""

import asyncio
import threading

import pytest

from tether.job.batching import CallBatcher


class Recorder:
    """A flush that records its batches; ``gate`` holds the first write until released."""

    def __init__(self, hold_first: bool = False) -> None:
        self.batches: list[list] = []
        self.threads: list[threading.Thread] = []  # which thread wrote each batch
        self.thread: threading.Thread | None = None
        self.gate = threading.Event()
        self.entered = threading.Event()
        if not hold_first:
            self.gate.set()

    def __call__(self, ops):
        self.batches.append(list(ops))
        self.thread = threading.current_thread()
        self.threads.append(self.thread)
        self.entered.set()
        self.gate.wait(10)
        return [(None, ValueError(op)) if str(op).startswith("bad") else (op.upper(), None)
                for op in ops]


def run(target, *args):
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def test_a_lone_call_is_written_at_once_alone():
    flush = Recorder()
    b = CallBatcher(flush, linger_s=30)
    b.enter()
    assert b.submit("a") == "A"
    b.leave()
    assert flush.batches == [["a"]]


def test_ops_queued_during_a_write_share_the_next_one_in_arrival_order():
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, linger_s=0)
    results = {}
    first = run(lambda: results.setdefault("first", b.submit("first")))
    assert flush.entered.wait(5)
    others = []
    for name in ("x", "y", "z"):
        others.append(run(lambda n=name: results.setdefault(n, b.submit(n))))
        while len(b._pending) < len(others):  # queued behind the write in progress
            threading.Event().wait(0.001)
    flush.gate.set()
    for t in [first, *others]:
        t.join(5)
    assert flush.batches == [["first"], ["x", "y", "z"]]
    assert results == {"first": "FIRST", "x": "X", "y": "Y", "z": "Z"}
    assert (b.flushes, b.ops) == (2, 4)


def test_one_op_failing_fails_only_that_op():
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, linger_s=0)
    out = {}

    def go(name):
        try:
            out[name] = b.submit(name)
        except ValueError as exc:
            out[name] = exc

    threads = [run(go, "lead")]
    assert flush.entered.wait(5)
    for name in ("ok1", "bad", "ok2"):
        threads.append(run(go, name))
        while len(b._pending) < len(threads) - 1:
            threading.Event().wait(0.001)
    flush.gate.set()
    for t in threads:
        t.join(5)
    assert out["ok1"] == "OK1" and out["ok2"] == "OK2" and isinstance(out["bad"], ValueError)
    assert flush.batches[1] == ["ok1", "bad", "ok2"]


def test_a_failed_write_fails_every_op_in_it_and_the_next_write_goes_on():
    calls = []

    def flush(ops):
        calls.append(list(ops))
        if len(calls) == 1:
            raise ConnectionError("database went away")
        return [(op, None) for op in ops]

    b = CallBatcher(flush)
    with pytest.raises(ConnectionError):
        b.submit("a")
    assert b.submit("b") == "b"


def test_a_leader_waits_for_every_call_in_progress_then_writes_them_together():
    flush = Recorder()
    b = CallBatcher(flush, linger_s=30)  # a broken wake-up would hang here for 30 s
    for _ in range(3):
        b.enter()
    threads = [run(b.submit, name) for name in ("a", "b", "c")]
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert len(flush.batches) == 1 and sorted(flush.batches[0]) == ["a", "b", "c"]


def test_a_call_that_leaves_without_writing_releases_the_lingering_leader():
    flush = Recorder()
    b = CallBatcher(flush, linger_s=30)
    b.enter()
    b.enter()  # a second call in progress that will not write (its provider raised)
    t = run(b.submit, "a")
    while not b._lingering:
        threading.Event().wait(0.001)
    b.leave()
    t.join(10)
    assert not t.is_alive() and flush.batches == [["a"]]


def test_linger_is_bounded_when_a_call_in_progress_never_writes():
    flush = Recorder()
    b = CallBatcher(flush, linger_s=0.01)
    b.enter()
    b.enter()
    b.enter()
    assert b.submit("a") == "A"  # the other two are still in progress: waited 10 ms, alone
    assert flush.batches == [["a"]]


def test_max_batch_caps_a_write_and_the_rest_follow():
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, max_batch=2, linger_s=0)
    threads = [run(b.submit, "lead")]
    assert flush.entered.wait(5)
    for name in ("p", "q", "r"):
        threads.append(run(b.submit, name))
        while len(b._pending) < len(threads) - 1:
            threading.Event().wait(0.001)
    flush.gate.set()
    for t in threads:
        t.join(5)
    assert flush.batches == [["lead"], ["p", "q"], ["r"]]


# --- coroutines (asubmit) --------------------------------------------------------------------

async def spin_until(predicate, what):
    for _ in range(5000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"timed out waiting for {what}")


async def held_write(b, flush, op, what):
    """Start ``b.asubmit(op)`` and wait until its write is in ``flush`` (held by its gate)."""
    task = asyncio.ensure_future(b.asubmit(op))
    await spin_until(flush.entered.is_set, what)
    return task


def test_a_lone_coroutine_writes_on_a_thread_and_its_loop_keeps_running():
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, linger_s=0)
    ticks = []

    async def main():
        task = await held_write(b, flush, "a", "the write to start")
        for i in range(3):  # the write is held: the loop still runs other coroutines
            ticks.append(i)
            await asyncio.sleep(0)
        assert threading.current_thread() is not flush.thread
        flush.gate.set()
        return await task

    assert asyncio.run(main()) == "A"
    assert ticks == [0, 1, 2] and flush.batches == [["a"]]


def test_coroutines_queued_during_a_write_share_the_next_one():
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, linger_s=0)

    async def main():
        first = await held_write(b, flush, "first", "the first write")
        rest = [asyncio.ensure_future(b.asubmit(n)) for n in ("x", "y", "z")]
        await spin_until(lambda: len(b._pending) == 3, "three queued")
        flush.gate.set()
        return await asyncio.gather(first, *rest)

    assert asyncio.run(main()) == ["FIRST", "X", "Y", "Z"]
    assert flush.batches == [["first"], ["x", "y", "z"]]
    assert len(set(flush.threads)) == 1, "the thread that wrote the first batch wrote the next"


def test_a_thread_writing_when_a_coroutine_queued_writes_its_op_too():
    """The lead is never handed to a coroutine: it would have to wake only to start a thread."""
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, linger_s=0)
    lead = run(b.submit, "thread")
    assert flush.entered.wait(5)

    async def main():
        task = asyncio.ensure_future(b.asubmit("coro"))
        await spin_until(lambda: len(b._pending) == 1, "the coroutine queued")
        flush.gate.set()
        return await task

    assert asyncio.run(main()) == "CORO"
    lead.join(5)
    assert flush.batches == [["thread"], ["coro"]]
    assert flush.threads[0] is flush.threads[1] is lead


def test_a_thread_queued_behind_a_coroutine_write_is_handed_the_lead():
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, linger_s=0)
    out = {}

    async def main():
        task = await held_write(b, flush, "coro", "the coroutine's write")
        t = run(lambda: out.setdefault("thread", b.submit("thread")))
        await spin_until(lambda: len(b._pending) == 1, "the thread queued")
        flush.gate.set()
        value = await task
        await asyncio.to_thread(t.join, 5)
        return value, t

    value, t = asyncio.run(main())
    assert value == "CORO" and out == {"thread": "THREAD"}
    assert flush.threads[1] is t, "the thread wrote its own batch"


def test_a_cancelled_coroutine_leaves_no_one_stranded_and_its_write_stands():
    flush = Recorder(hold_first=True)
    b = CallBatcher(flush, linger_s=0)

    async def main():
        first = await held_write(b, flush, "first", "the first write")
        doomed = asyncio.ensure_future(b.asubmit("doomed"))
        after = asyncio.ensure_future(b.asubmit("after"))
        await spin_until(lambda: len(b._pending) == 2, "two queued")
        doomed.cancel()
        await asyncio.sleep(0)
        flush.gate.set()
        return await asyncio.gather(first, after), doomed.cancelled()

    assert asyncio.run(main()) == (["FIRST", "AFTER"], True)
    assert flush.batches == [["first"], ["doomed", "after"]]
    assert not b._leading and not b._pending


def test_a_coroutine_gets_its_own_error():
    b = CallBatcher(Recorder(), linger_s=0)

    async def main():
        with pytest.raises(ValueError):
            await b.asubmit("bad")
        return await b.asubmit("ok")

    assert asyncio.run(main()) == "OK"


def test_a_leader_that_fails_outside_the_write_fails_its_turn_and_strands_no_one():
    """Should leading itself raise (not the write: that error is each op's own), the turn's
    coroutines get the error, their ops are never written later, and the next write leads."""
    flush = Recorder()

    class Flaky(CallBatcher):
        fail = True

        def _gather(self, own):
            if self.fail:
                self.fail = False
                raise RuntimeError("leading failed")
            return super()._gather(own)

    b = Flaky(flush, linger_s=0)

    async def main():
        turn = [asyncio.ensure_future(b.asubmit(n)) for n in ("p", "q")]
        got = await asyncio.gather(*turn, return_exceptions=True)
        return got, await b.asubmit("next")

    got, after = asyncio.run(main())
    assert [type(e) for e in got] == [RuntimeError, RuntimeError]
    assert after == "NEXT" and flush.batches == [["next"]]
    assert not b._leading and not b._pending
