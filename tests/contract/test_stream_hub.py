"""``StreamHub.check``, the single step of the live streams' thread: one round of reads wakes
exactly the streams with something new. The thread is never started here (the hub is closed
first); the test makes each round itself."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from tether.api.stream_hub import REVOKED, RETRY, StreamHub


def _parked(gen):
    return asyncio.ensure_future(gen.__anext__())


def test_a_round_wakes_only_the_streams_with_news(app, clock):
    async def main():
        hub = StreamHub(app, poll_s=3600, keepalive_s=3600)
        hub.close()
        a = app.submit("t", {}, project="p1")
        b = app.submit("t", {}, project="p2")
        job_a, feed_p2, feed_all = (hub.job_stream(a.id), hub.feed_stream(["p2"]),
                                    hub.feed_stream(None))
        assert await job_a.__anext__() == RETRY
        assert (await job_a.__anext__()).startswith("id: 1\nevent: submitted\n")
        assert await feed_p2.__anext__() == RETRY and await feed_all.__anext__() == RETRY
        waiting = [_parked(g) for g in (job_a, feed_p2, feed_all)]
        await asyncio.sleep(0)
        assert hub.check() == 2  # the first round: both feeds read for themselves
        await asyncio.sleep(0.05)
        assert not any(w.done() for w in waiting)  # they read, found nothing, parked again

        clock.advance(1)  # a real clock moves between two commits
        app.store.append_event(a.id, "tick", {"n": 1})
        assert hub.check() == 2  # job a's stream and the feed of every project; not p2's
        tick_a, tick_all = await waiting[0], await waiting[2]
        assert tick_a.startswith("id: 2\nevent: tick\n") and '"job_id":%d' % a.id in tick_all
        assert not waiting[1].done()
        assert hub.check() == 0  # nothing new since

        clock.advance(1)
        app.store.append_event(b.id, "tick", {"n": 2})
        waiting[0], waiting[2] = _parked(job_a), _parked(feed_all)
        await asyncio.sleep(0)
        assert hub.check() == 2  # both feeds; job a's stream stays parked
        assert '"job_id":%d' % b.id in await waiting[1]
        assert '"job_id":%d' % b.id in await waiting[2]
        assert not waiting[0].done()
        waiting[0].cancel()  # a client going away: the stream unsubscribes
        with contextlib.suppress(asyncio.CancelledError):
            await waiting[0]
        for gen in (feed_p2, feed_all):
            await gen.aclose()
        assert hub._subs == set()

    asyncio.run(main())


def test_a_revoked_tokens_streams_and_waits_end_at_the_next_token_check(app):
    async def main():
        hub = StreamHub(app, poll_s=3600, keepalive_s=3600, recheck_s=3600)
        hub.close()
        gone, _ = app.store.create_token(name="gone", projects=["p1"], admin=False)
        kept, _ = app.store.create_token(name="kept", projects=["p1"], admin=False)
        job = app.submit("t", {}, project="p1")
        ending = [hub.job_stream(job.id, token=gone.id), hub.feed_stream(["p1"], token=gone.id)]
        staying = [hub.job_stream(job.id, token=kept.id), hub.feed_stream(None, token=None)]
        for gen in ending + staying:
            assert await gen.__anext__() == RETRY
        assert (await ending[0].__anext__()).startswith("id: 1\nevent: submitted\n")
        assert (await staying[0].__anext__()).startswith("id: 1\nevent: submitted\n")
        waiting = [_parked(g) for g in ending + staying]
        waiter = asyncio.ensure_future(hub.until_terminal(job, 3600, gone.id))
        await asyncio.sleep(0.05)
        assert hub.check_tokens() == 0  # both tokens live: nothing read ends

        assert app.store.revoke_token(gone.id)
        assert hub.check_tokens() == 3  # one read; the job stream, the feed, the wait
        assert await waiting[0] == REVOKED and await waiting[1] == REVOKED
        for gen in ending:
            with pytest.raises(StopAsyncIteration):  # ended, not parked again
                await gen.__anext__()
        assert (await waiter).id == job.id and not (await waiter).terminal  # stopped waiting
        await asyncio.sleep(0.05)
        assert not any(w.done() for w in waiting[2:])  # another token's, and no auth's
        assert hub.check_tokens() == 0
        for w in waiting[2:]:
            w.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await w
        for gen in staying:
            await gen.aclose()
        assert hub._subs == set()

    asyncio.run(main())
