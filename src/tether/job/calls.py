"""Reserve, call, settle: how ``ctx.call`` spends money without ever paying twice.

1. A journaled ``done`` key returns its recorded result: the provider is not called again,
   unless what it asks changed since (its fingerprint differs: ``replay.py`` decides).
2. The worst case (``Estimate`` priced with the job's pinned profile) is reserved in one
   transaction that also checks every job and project limit; a reservation that would cross a
   limit raises ``BudgetExhausted`` and no call is made. Concurrent calls of one job share
   that transaction (``batching.py``), each checked as if it were alone after the ones before.
3. The call runs with no transaction open (heartbeats keep the lease alive meanwhile).
4. Settle records the real usage and cost, the result, and a ledger row, in one transaction
   (shared the same way).
   A call that raised is refunded only when the provider provably did not bill it; otherwise
   its reservation is counted as spent (unconfirmed).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from typing import Any
from collections.abc import Callable

from ..core.budget import Reservation
from ..core.pricing import ModelPrice, PriceProfile
from ..core.retry import error_code_of, summarize
from ..core.serialize import dumps, dumps_back
from ..core.usage import Estimate
from ..core.validate import on_change as checked_policy
from ..errors import BudgetExhausted, ControlSignal, InvalidCall, PolicyBlock
from ..providers.adapters import extract, unwrap
from ..providers.classify import classify_exception, refusal_in
from ..providers.headers import headroom_from, response_headers
from ..records import JournalEntry
from ..store.base import CallReserve, CallSettle
from ..store.ratelimits import RateLimit
from .batching import CallBatcher
from .host import RunningJob
from .replay import call_fingerprint, decide, differences, mismatch


def request_hash(provider: str, model: str, request: Any) -> str:
    body = dumps({"provider": provider, "model": model, "request": request}, what="request")
    return hashlib.sha256(body.encode()).hexdigest()


class _Call:
    """One call's arguments, checked, and what pricing them gave."""

    __slots__ = ("key", "provider", "model", "fn", "cache", "profile", "price", "reservation",
                 "rhash", "fingerprint", "on_change")

    def __init__(self, ctx: RunningJob, key: str, provider: str, model: str,
                 estimate: Estimate, fn: Callable[[], Any], request: Any,
                 cache: bool, on_change: str | None = None) -> None:
        if not isinstance(key, str) or not key:
            raise InvalidCall("ctx.call needs a non-empty string key")
        if cache and request is None:
            raise InvalidCall("ctx.call(cache=True) needs request=: the request is what is "
                              "cached")
        if not isinstance(estimate, Estimate):
            raise InvalidCall("ctx.call needs estimate=Estimate(...)")
        self.key, self.provider, self.model, self.fn, self.cache = key, provider, model, fn, cache
        self.profile: PriceProfile = ctx.app.profile_for(ctx.job)
        self.price: ModelPrice = self.profile.price(provider, model)
        self.reservation: Reservation = self.price.reservation(estimate)
        self.rhash = request_hash(provider, model, request) if request is not None else None
        self.fingerprint = call_fingerprint(provider, model, estimate, self.rhash)
        self.on_change = checked_policy(on_change)

    @property
    def tokens(self) -> int:
        return self.reservation.input_tokens + self.reservation.output_tokens


class Calls:
    """The call path of one attempt, owned by its ``JobContext``: ``ctx.call`` and
    ``ctx.acall`` are ``call`` and ``acall`` here. Reservations and settlements of the
    attempt's concurrent calls share transactions through one ``CallBatcher``."""

    def __init__(self, ctx: RunningJob) -> None:
        self._ctx = ctx
        self._batcher = CallBatcher(lambda ops: ctx.store.account(ctx.id, ctx.attempt, ops))

    @property
    def flushes(self) -> int:
        """How many writes carried this attempt's reservations and settlements."""
        return self._batcher.flushes

    @property
    def ops(self) -> int:
        """How many reservations and settlements were written."""
        return self._batcher.ops

    # --- the two entry points -------------------------------------------------------------------

    def call(self, *, key: str, provider: str, model: str, estimate: Estimate,
             fn: Callable[[], Any], request: Any = None, cache: bool = False,
             on_change: str | None = None) -> Any:
        with self._batcher.calling(), self._span(key, provider, model, estimate) as span:
            c = _Call(self._ctx, key, provider, model, estimate, fn, request, cache, on_change)
            return self._call(c, span)

    async def acall(self, *, key: str, provider: str, model: str, estimate: Estimate,
                    fn: Callable[[], Any], request: Any = None, cache: bool = False,
                    on_change: str | None = None) -> Any:
        """``call`` for async jobs: ``fn`` is awaited on this loop, and the loop never blocks
        on the store — the reservation and the settlement are queued with the job's other
        calls (``asubmit``) and written on a thread; the rarer store work (the cache, rate
        limits, a release) runs in a thread."""
        with self._batcher.calling(), self._span(key, provider, model, estimate) as span:
            c = _Call(self._ctx, key, provider, model, estimate, fn, request, cache, on_change)
            return await self._acall(c, span)

    def _span(self, key: str, provider: str, model: str, estimate: Estimate) -> Any:
        """The call's span (``tracing.py``; a shared no-op when tracing is off)."""
        ctx = self._ctx
        return ctx.trace.call(ctx.id, ctx.job_stage, key, provider, model,
                              getattr(estimate, "max_output_tokens", None))

    def _call(self, c: _Call, span: Any) -> Any:
        ctx = self._ctx
        key = c.key
        self._boundary(c.cache)
        repay = False
        if c.cache:
            hit, value, repay = self._reused(c)
            if hit:
                span.hit()
                return value
            hit, value = (False, None) if repay else self._from_cache(c)
            if hit:
                span.cached()
                return value
        entry = self._reserve(c)
        if entry is not None:
            hit, value = self._replayed(c, entry)
            if hit:
                span.hit()
                return value
            entry = self._reserve(c)  # the changed call, paid again
            if entry is not None:
                return entry.result
        span.reserved(c.reservation.cost_usd)
        limited = False
        limits = ctx.app.rate_limits_for(c.provider, c.model)
        try:
            limited = self._wait_for_rate(key, limits, c.tokens)
            raw = c.fn()
            if inspect.isawaitable(raw):
                raw = asyncio.run(_await(raw))
            raw, headers = unwrap(raw)
            if inspect.isawaitable(raw):
                raw = asyncio.run(_await(raw))
        except BaseException as exc:  # noqa: BLE001 - released, then re-raised classified
            if limited:
                self._settle_rate(key, None, limits, response_headers(exc))
            self._release(key, exc)
            self._raise_classified(exc)
        op, result, refusal = self._settle_op(c, raw)
        self._batcher.submit(op)
        span.settled(op)
        if limited:
            self._settle_rate(key, op, limits, headers)
        return self._settled(op, result, refusal)

    async def _acall(self, c: _Call, span: Any) -> Any:
        ctx = self._ctx
        key = c.key
        if c.cache:
            await asyncio.to_thread(self._boundary, c.cache)
        else:
            self._boundary(c.cache)  # reads only what the heartbeat already delivered
        repay = False
        if c.cache:
            hit, value, repay = await asyncio.to_thread(self._reused, c)
            if hit:
                span.hit()
                return value
            hit, value = (False, None) if repay else await asyncio.to_thread(self._from_cache, c)
            if hit:
                span.cached()
                return value
        entry = await self._areserve(c)
        if entry is not None:
            if entry.fingerprint in (None, c.fingerprint):  # unchanged: no thread needed
                hit, value = self._replayed(c, entry)
            else:
                hit, value = await asyncio.to_thread(self._replayed, c, entry)
            if hit:
                span.hit()
                return value
            entry = await self._areserve(c)  # the changed call, paid again
            if entry is not None:
                return entry.result
        span.reserved(c.reservation.cost_usd)
        limited = False
        limits = ctx.app.rate_limits_for(c.provider, c.model)
        try:
            if limits:
                limited = await asyncio.to_thread(self._wait_for_rate, key, limits, c.tokens)
            raw = c.fn()
            if inspect.isawaitable(raw):
                raw = await raw
            raw, headers = unwrap(raw)
            if inspect.isawaitable(raw):
                raw = await raw
        except BaseException as exc:  # noqa: BLE001 - released, then re-raised classified
            if limited:
                await asyncio.to_thread(self._settle_rate, key, None, limits,
                                        response_headers(exc))
            await asyncio.to_thread(self._release, key, exc)
            self._raise_classified(exc)
        op, result, refusal = self._settle_op(c, raw)
        await self._batcher.asubmit(op)
        span.settled(op)
        if limited:
            await asyncio.to_thread(self._settle_rate, key, op, limits, headers)
        return self._settled(op, result, refusal)

    # --- the steps ------------------------------------------------------------------------------

    def _boundary(self, cache: bool) -> None:
        """The safe boundary before a call. Without ``cache`` the next store operation is the
        reservation, which itself checks the lease and the job's state in its transaction (and
        raises the same signals), so only a signal already pending is checked here: reading
        the job's state first as well would cost a query per call and decide nothing more."""
        ctx = self._ctx
        if cache:
            ctx.check()
            return
        pending = ctx.lease.pending
        if pending is not None:
            ctx.lease.raise_signal(pending)  # exactly what ctx.check() does with it

    def _reserve_op(self, c: _Call) -> CallReserve:
        return CallReserve(c.key, self._ctx.job_stage, c.provider, c.model, c.reservation,
                           c.rhash, c.fingerprint)

    def _reserve(self, c: _Call) -> JournalEntry | None:
        try:
            return self._batcher.submit(self._reserve_op(c))
        except ControlSignal as sig:
            self._ctx.lease.remember(sig)
            raise

    async def _areserve(self, c: _Call) -> JournalEntry | None:
        try:
            return await self._batcher.asubmit(self._reserve_op(c))
        except ControlSignal as sig:
            self._ctx.lease.remember(sig)
            raise

    def _reused(self, c: _Call) -> tuple[bool, Any, bool]:
        """A ``cache`` call's journaled answer: ``(found, value, repay)``; ``repay``: the key
        is done but changed, and is to be paid again (not answered from the cache)."""
        done = self._ctx.store.journal(self._ctx.id, c.key)
        if done and done[0].status == "done":
            hit, value = self._replayed(c, done[0])
            return hit, value, not hit
        return False, None, False

    def _replayed(self, c: _Call, entry: JournalEntry) -> tuple[bool, Any]:
        """A ``done`` entry of ``c``'s key: ``(True, its result)`` when the call is unchanged
        or the change is to be reused; ``(False, None)`` when it is to be paid again (the
        journal entry superseded). A change to pause for raises ``JournalMismatch``."""
        ctx = self._ctx
        differs = differences(entry.fingerprint, c.fingerprint)
        if differs:
            decision = decide(ctx, c.on_change)
            if decision == "pause":
                mismatch(ctx, key=c.key, stage=entry.stage, differs=differs)
            ctx.store.change_call(ctx.id, ctx.attempt, key=c.key, decision=decision,
                                  fingerprint=c.fingerprint, differs=differs)
            if decision == "repay":
                ctx.stats["calls_repaid"] += 1
                return False, None
        ctx.stats["calls_reused"] += 1
        return True, entry.result

    def _from_cache(self, c: _Call) -> tuple[bool, Any]:
        ctx = self._ctx
        if c.rhash is None:
            return False, None
        hit = ctx.store.cached_result(ctx.project, c.rhash)
        if hit is None:
            return False, None
        value, usage = hit
        ctx.store.record_cached(ctx.id, ctx.attempt, key=c.key, stage=ctx.job_stage,
                                provider=c.provider, model=c.model, request_hash=c.rhash,
                                result_json=dumps(value, what="cached result"), usage=usage,
                                fingerprint=c.fingerprint)
        ctx.stats["calls_cached"] += 1
        return True, value

    def _wait_for_rate(self, key: str, limits: list[RateLimit], tokens: int) -> bool:
        """Block until every shared rate limit has room for this call (never fails for it)."""
        ctx = self._ctx
        if not limits:
            return False
        while True:
            wait = ctx.store.acquire_rate(limits, tokens=tokens, job_id=ctx.id, key=key)
            if wait <= 0:
                return True
            ctx.stats["rate_waits"] += 1
            ctx.check()
            ctx.app.clock.sleep(min(wait, 1.0))

    def _release(self, key: str, exc: BaseException) -> None:
        ctx = self._ctx
        mapped = classify_exception(exc)
        if isinstance(mapped, ControlSignal):
            billed = False if isinstance(mapped, BudgetExhausted) else None
            code = mapped.code
        else:
            billed = getattr(mapped, "billed", None)
            code = error_code_of(mapped)
        ctx.store.release(ctx.id, ctx.attempt, key=key, error_code=code,
                          error_summary=summarize(exc), billed=billed)

    def _raise_classified(self, exc: BaseException) -> None:
        mapped = classify_exception(exc)
        if isinstance(mapped, ControlSignal):
            self._ctx.lease.remember(mapped)
        if mapped is exc:
            raise exc
        raise mapped from exc

    @staticmethod
    def _settle_op(c: _Call, raw: Any) -> tuple[CallSettle, Any, str | None]:
        """The settlement of a call that returned ``raw``; the result as the journal will give
        it back (what a resumed job gets for this key, so the first run gets the same); a
        refusal."""
        value, usage = extract(raw)
        result_json, result = dumps_back(value, what=f"result of call {c.key!r}")
        refusal = refusal_in(value)
        return (CallSettle(c.key, usage, c.price, c.profile.id, result_json,
                           refusal is not None), result, refusal)

    def _settled(self, op: CallSettle, result: Any, refusal: str | None) -> Any:
        """What follows a written settlement: the stats, a refusal raised, the result."""
        stats = self._ctx.stats
        stats["calls_made"] += 1
        if refusal is not None:
            stats["calls_refused"] += 1
            raise PolicyBlock(f"provider refused call {op.key!r}: {refusal[:200]}", billed=True)
        return result

    def _settle_rate(self, key: str, op: CallSettle | None, limits: list[RateLimit],
                     headers: Any) -> None:
        """Mark a granted call answered, counted by the tokens it used (``op``: it settled),
        and store the rate-limit headroom its response or error told (``core/headroom.py``)."""
        ctx = self._ctx
        scopes = [limit.scope for limit in limits if limit.from_headers]
        headroom = headroom_from(headers) if scopes and headers is not None else None
        tokens = None if op is None else op.usage.input_tokens + op.usage.output_tokens
        ctx.store.settle_rate(ctx.id, key, tokens, headroom=headroom, scopes=scopes)


async def _await(aw: Any) -> Any:
    return await aw
