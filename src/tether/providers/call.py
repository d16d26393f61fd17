"""Reserve, call, settle: how ``ctx.call`` spends money without ever paying twice.

1. A journaled ``done`` key returns its recorded result: the provider is not called again.
2. The worst case (``Estimate`` priced with the job's pinned profile) is reserved in one
   transaction that also checks every job and project limit; a reservation that would cross a
   limit raises ``BudgetExhausted`` and no call is made.
3. The call runs with no transaction open (heartbeats keep the lease alive meanwhile).
4. Settle records the real usage and cost, the result, and a ledger row, in one transaction.
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
from ..core.serialize import dumps, loads
from ..core.usage import Estimate
from ..errors import ControlSignal, InvalidPayload
from .adapters import extract

if TYPE_CHECKING:  # pragma: no cover
    from ..context import JobContext


def request_hash(provider: str, model: str, request: Any) -> str:
    body = dumps({"provider": provider, "model": model, "request": request}, what="request")
    return hashlib.sha256(body.encode()).hexdigest()


def _prepare(ctx: "JobContext", key: str, provider: str, model: str, estimate: Estimate,
             request: Any) -> tuple[Any, Reservation, str | None, Any]:
    if not isinstance(key, str) or not key:
        raise InvalidPayload("ctx.call needs a non-empty string key")
    if not isinstance(estimate, Estimate):
        raise InvalidPayload("ctx.call needs estimate=Estimate(...)")
    profile = ctx.app.profile_for(ctx.job)
    price = profile.price(provider, model)
    reservation = Reservation(
        cost_usd=price.worst_case(estimate.input_upper_bound, estimate.max_output_tokens),
        input_tokens=estimate.input_upper_bound, output_tokens=estimate.max_output_tokens)
    rhash = request_hash(provider, model, request) if request is not None else None
    return profile, reservation, rhash, price


def _reserve(ctx: "JobContext", key: str, provider: str, model: str,
             reservation: Reservation, rhash: str | None) -> Any:
    try:
        return ctx.store.reserve(ctx.id, ctx.attempt, key=key, stage=ctx.job_stage,
                                 provider=provider, model=model, reservation=reservation,
                                 request_hash=rhash)
    except ControlSignal as sig:
        ctx.lease.signal(sig) if sig.code == "lease_lost" else None
        ctx.raised = ctx.raised or sig
        raise


def _settle(ctx: "JobContext", key: str, raw: Any, price: Any, profile: Any) -> Any:
    value, usage = extract(raw)
    result_json = dumps(value, what=f"result of call {key!r}")
    ctx.store.settle(ctx.id, ctx.attempt, key=key, usage=usage, price=price,
                     profile_id=profile.id, result_json=result_json)
    ctx.stats["calls_made"] += 1
    return loads(result_json)


def _release(ctx: "JobContext", key: str, exc: BaseException) -> None:
    if isinstance(exc, ControlSignal):
        billed = None
    else:
        billed = getattr(exc, "billed", None)
    ctx.store.release(ctx.id, ctx.attempt, key=key, error_code=error_code_of(exc)
                      if not isinstance(exc, ControlSignal) else exc.code,
                      error_summary=summarize(exc), billed=billed)


def call(ctx: "JobContext", *, key: str, provider: str, model: str, estimate: Estimate,
         fn: Callable[[], Any], request: Any = None) -> Any:
    ctx.check()
    profile, reservation, rhash, price = _prepare(ctx, key, provider, model, estimate, request)
    entry = _reserve(ctx, key, provider, model, reservation, rhash)
    if entry is not None:
        ctx.stats["calls_reused"] += 1
        return entry.result
    try:
        raw = fn()
        if inspect.isawaitable(raw):
            raw = asyncio.run(_await(raw))
    except BaseException as exc:
        _release(ctx, key, exc)
        raise
    return _settle(ctx, key, raw, price, profile)


async def _await(aw: Any) -> Any:
    return await aw


async def acall(ctx: "JobContext", *, key: str, provider: str, model: str, estimate: Estimate,
                fn: Callable[[], Any], request: Any = None) -> Any:
    """``call`` for async jobs: store work runs in a thread, ``fn`` is awaited on this loop."""
    await asyncio.to_thread(ctx.check)
    profile, reservation, rhash, price = _prepare(ctx, key, provider, model, estimate, request)
    entry = await asyncio.to_thread(_reserve, ctx, key, provider, model, reservation, rhash)
    if entry is not None:
        ctx.stats["calls_reused"] += 1
        return entry.result
    try:
        raw = fn()
        if inspect.isawaitable(raw):
            raw = await raw
    except BaseException as exc:
        await asyncio.to_thread(_release, ctx, key, exc)
        raise
    return await asyncio.to_thread(_settle, ctx, key, raw, price, profile)
