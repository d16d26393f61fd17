"""Reserve, call, settle: how ``ctx.call`` spends money without ever paying twice.

1. A journaled ``done`` key returns its recorded result: the provider is not called again.
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
from typing import TYPE_CHECKING, Any, Callable

from ..core.budget import Reservation
from ..core.retry import error_code_of, summarize
from ..core.serialize import dumps, dumps_back
from ..core.usage import Estimate
from ..errors import BudgetExhausted, ControlSignal, InvalidPayload, PolicyBlock
from ..store.base import CallReserve, CallSettle
from .adapters import extract
from .classify import classify_exception, refusal_in

if TYPE_CHECKING:  # pragma: no cover
    from ..context import JobContext


def request_hash(provider: str, model: str, request: Any) -> str:
    body = dumps({"provider": provider, "model": model, "request": request}, what="request")
    return hashlib.sha256(body.encode()).hexdigest()


def _prepare(ctx: "JobContext", key: str, provider: str, model: str, estimate: Estimate,
             request: Any, cache: bool = False) -> tuple[Any, Reservation, str | None, Any]:
    if not isinstance(key, str) or not key:
        raise InvalidPayload("ctx.call needs a non-empty string key")
    if cache and request is None:
        raise InvalidPayload("ctx.call(cache=True) needs request=: the request is what is cached")
    if not isinstance(estimate, Estimate):
        raise InvalidPayload("ctx.call needs estimate=Estimate(...)")
    profile = ctx.app.profile_for(ctx.job)
    price = profile.price(provider, model)
    reservation = price.reservation(estimate)
    rhash = request_hash(provider, model, request) if request is not None else None
    return profile, reservation, rhash, price


def _reserve_op(ctx: "JobContext", key: str, provider: str, model: str,
                reservation: Reservation, rhash: str | None) -> CallReserve:
    return CallReserve(key, ctx.job_stage, provider, model, reservation, rhash)


def _reserve(ctx: "JobContext", op: CallReserve) -> Any:
    try:
        return ctx._batcher.submit(op)
    except ControlSignal as sig:
        _signalled(ctx, sig)
        raise


async def _areserve(ctx: "JobContext", op: CallReserve) -> Any:
    try:
        return await ctx._batcher.asubmit(op)
    except ControlSignal as sig:
        _signalled(ctx, sig)
        raise


def _signalled(ctx: "JobContext", sig: ControlSignal) -> None:
    if sig.code == "lease_lost":
        ctx.lease.signal(sig)
    ctx.raised = ctx.raised or sig


def _settle_op(key: str, raw: Any, price: Any, profile: Any) -> tuple[CallSettle, Any, Any]:
    """The settlement of a call that returned ``raw``; the result as the journal will give it
    back (what a resumed job gets for this key, so the first run gets the same); a refusal."""
    value, usage = extract(raw)
    result_json, result = dumps_back(value, what=f"result of call {key!r}")
    refusal = refusal_in(value)
    return (CallSettle(key, usage, price, profile.id, result_json, refusal is not None),
            result, refusal)


def _settled(ctx: "JobContext", op: CallSettle, result: Any, refusal: Any) -> Any:
    """What follows a written settlement: the stats, a refusal raised, the result."""
    ctx.stats["calls_made"] += 1
    if refusal is not None:
        ctx.stats["calls_refused"] += 1
        raise PolicyBlock(f"provider refused call {op.key!r}: {refusal[:200]}", billed=True)
    return result


def _settle(ctx: "JobContext", key: str, raw: Any, price: Any, profile: Any,
            limited: bool) -> Any:
    op, result, refusal = _settle_op(key, raw, price, profile)
    ctx._batcher.submit(op)
    if limited:
        _settle_rate(ctx, op)
    return _settled(ctx, op, result, refusal)


def _settle_rate(ctx: "JobContext", op: CallSettle) -> None:
    ctx.store.settle_rate(ctx.id, op.key, op.usage.input_tokens + op.usage.output_tokens)


def _wait_for_rate(ctx: "JobContext", key: str, limits: list, tokens: int) -> bool:
    """Block until every shared rate limit has room for this call (never fails for it)."""
    if not limits:
        return False
    while True:
        wait = ctx.store.acquire_rate(limits, tokens=tokens, job_id=ctx.id, key=key)
        if wait <= 0:
            return True
        ctx.stats["rate_waits"] += 1
        ctx.check()
        ctx.app.clock.sleep(min(wait, 1.0))


def _from_cache(ctx: "JobContext", key: str, provider: str, model: str,
                rhash: str | None) -> tuple[bool, Any]:
    if rhash is None:
        return False, None
    hit = ctx.store.cached_result(ctx.project, rhash)
    if hit is None:
        return False, None
    value, usage = hit
    ctx.store.record_cached(ctx.id, ctx.attempt, key=key, stage=ctx.job_stage,
                            provider=provider, model=model, request_hash=rhash,
                            result_json=dumps(value, what="cached result"), usage=usage)
    ctx.stats["calls_cached"] += 1
    return True, value


def _release(ctx: "JobContext", key: str, exc: BaseException) -> None:
    mapped = classify_exception(exc)
    if isinstance(mapped, ControlSignal):
        billed = False if isinstance(mapped, BudgetExhausted) else None
        code = mapped.code
    else:
        billed = getattr(mapped, "billed", None)
        code = error_code_of(mapped)
    ctx.store.release(ctx.id, ctx.attempt, key=key, error_code=code,
                      error_summary=summarize(exc), billed=billed)


def _reused(ctx: "JobContext", key: str) -> tuple[bool, Any]:
    done = ctx.store.journal(ctx.id, key)
    if done and done[0].status == "done":
        ctx.stats["calls_reused"] += 1
        return True, done[0].result
    return False, None


def _boundary(ctx: "JobContext", cache: bool) -> None:
    """The safe boundary before a call. Without ``cache`` the next store operation is the
    reservation, which itself checks the lease and the job's state in its transaction (and
    raises the same signals), so only a signal already pending is checked here: reading the
    job's state first as well would cost a query per call and decide nothing more."""
    if cache:
        ctx.check()
        return
    pending = ctx.lease.pending
    if pending is not None:
        ctx._raise(pending)  # exactly what ctx.check() does with it


def call(ctx: "JobContext", *, key: str, provider: str, model: str, estimate: Estimate,
         fn: Callable[[], Any], request: Any = None, cache: bool = False) -> Any:
    with ctx._batcher.calling():
        return _call(ctx, key, provider, model, estimate, fn, request, cache)


def _call(ctx: "JobContext", key: str, provider: str, model: str, estimate: Estimate,
          fn: Callable[[], Any], request: Any, cache: bool) -> Any:
    _boundary(ctx, cache)
    profile, reservation, rhash, price = _prepare(ctx, key, provider, model, estimate, request,
                                                  cache)
    if cache:
        hit, value = _reused(ctx, key)
        if not hit:
            hit, value = _from_cache(ctx, key, provider, model, rhash)
        if hit:
            return value
    entry = _reserve(ctx, _reserve_op(ctx, key, provider, model, reservation, rhash))
    if entry is not None:
        ctx.stats["calls_reused"] += 1
        return entry.result
    limited = False
    try:
        limited = _wait_for_rate(ctx, key, ctx.app.rate_limits_for(provider, model),
                                 reservation.input_tokens + reservation.output_tokens)
        raw = fn()
        if inspect.isawaitable(raw):
            raw = asyncio.run(_await(raw))
    except BaseException as exc:
        _release(ctx, key, exc)
        _raise_classified(ctx, exc)
    return _settle(ctx, key, raw, price, profile, limited)


def _raise_classified(ctx: "JobContext", exc: BaseException) -> None:
    mapped = classify_exception(exc)
    if isinstance(mapped, ControlSignal):
        ctx.raised = ctx.raised or mapped
    if mapped is exc:
        raise exc
    raise mapped from exc


async def _await(aw: Any) -> Any:
    return await aw


async def acall(ctx: "JobContext", *, key: str, provider: str, model: str, estimate: Estimate,
                fn: Callable[[], Any], request: Any = None, cache: bool = False) -> Any:
    """``call`` for async jobs: ``fn`` is awaited on this loop, and the loop never blocks on
    the store — the reservation and the settlement are queued with the job's other calls
    (``asubmit``) and written on a thread; the rarer store work (the cache, rate limits, a
    release) runs in a thread."""
    with ctx._batcher.calling():
        return await _acall(ctx, key, provider, model, estimate, fn, request, cache)


async def _acall(ctx: "JobContext", key: str, provider: str, model: str, estimate: Estimate,
                 fn: Callable[[], Any], request: Any, cache: bool) -> Any:
    if cache:
        await asyncio.to_thread(_boundary, ctx, cache)
    else:
        _boundary(ctx, cache)  # reads only what the heartbeat already delivered
    profile, reservation, rhash, price = _prepare(ctx, key, provider, model, estimate, request,
                                                  cache)
    if cache:
        hit, value = await asyncio.to_thread(_reused, ctx, key)
        if not hit:
            hit, value = await asyncio.to_thread(_from_cache, ctx, key, provider, model, rhash)
        if hit:
            return value
    entry = await _areserve(ctx, _reserve_op(ctx, key, provider, model, reservation, rhash))
    if entry is not None:
        ctx.stats["calls_reused"] += 1
        return entry.result
    limited = False
    try:
        limits = ctx.app.rate_limits_for(provider, model)
        if limits:
            limited = await asyncio.to_thread(_wait_for_rate, ctx, key, limits,
                                              reservation.input_tokens
                                              + reservation.output_tokens)
        raw = fn()
        if inspect.isawaitable(raw):
            raw = await raw
    except BaseException as exc:
        await asyncio.to_thread(_release, ctx, key, exc)
        _raise_classified(ctx, exc)
    op, result, refusal = _settle_op(key, raw, price, profile)
    await ctx._batcher.asubmit(op)
    if limited:
        await asyncio.to_thread(_settle_rate, ctx, op)
    return _settled(ctx, op, result, refusal)
