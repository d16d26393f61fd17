"""``ctx.batch``: many requests sent as one provider batch, at the batch price, durably.

1. Money first: every item's worst case (its ``Estimate`` at the profile's batch price) is
   reserved in one transaction against the job's, its ancestors' and its project's limits,
   and the batch is journaled (its key, its items' keys and request hashes) before anything
   is uploaded. A batch that would cross a limit is never sent: ``BudgetExhausted`` pauses
   the job, as for a call.
2. The upload; the provider's batch id is committed as soon as it is known.
3. The job waits (wait kind ``provider_batch``) without a lease or a worker slot. Workers'
   sweeps poll the batch (``worker/batch_poller.py``); the sweep that sees it ended settles
   every item at the batch price and wakes the job in one transaction.
4. The replay returns the recorded answers; a recorded batch is never uploaded again.

Crash windows: the batch is marked ``uploading`` (committed) just before its upload. A
replay that finds it unmarked uploads it (it was never sent). Marked, the id not committed,
the replay asks the provider for a batch carrying the batch's ``tether_key``
(``adapter.find``) and reattaches to it; found nothing, it uploads (the provider never had
it). A provider that cannot be asked (``adapter.reattach`` false) gets no second upload: the
reservation is spent, unconfirmed, and every item comes back a ``BatchFailure`` with code
``unconfirmed``. A job cancelled with an unmarked batch gets its reservation back in the
cancel; a marked one whose job ended is settled by the sweep (``worker/batch_poller.py``).
"""

from __future__ import annotations

import asyncio
from typing import Any
from collections.abc import Iterable, Mapping

from ..core.batches import BatchFailure, Resend, item_ids, resend_key, tether_key
from ..core.usage import Estimate
from ..core.waits import WaitSpec
from ..errors import ControlSignal, InvalidCall, ProviderError
from ..providers.batches import BatchAdapter
from ..providers.classify import classify_exception
from ..records import ProviderBatch
from .calls import request_hash
from .host import RunningJob
from .replay import mismatch
from .waits import wait


def batch(ctx: RunningJob, *, key: str, provider: str, model: str,
          requests: Mapping[str, Any], estimate: Estimate | Mapping[str, Estimate],
          mode: str = "batch", resend: Resend | int | None = None) -> dict[str, Any]:
    """Each request's answer by its key; an item that got no answer comes back as a
    ``BatchFailure`` in its place (classified like a call's failure). ``resend``: the items
    whose failures the policy allows are sent again, each round a new batch
    (``core.batches.Resend``; an int is that many rounds). ``mode`` ``background``: one
    request made in the provider's background mode, at the standard price (``background``)."""
    if not isinstance(key, str) or not key:
        raise InvalidCall("ctx.batch needs a non-empty string key")
    if not requests or not all(isinstance(k, str) and k for k in requests):
        raise InvalidCall("ctx.batch needs requests: a non-empty mapping of string keys")
    try:
        policy = resend if isinstance(resend, Resend) else Resend(rounds=resend or 0)
    except ValueError as exc:
        raise InvalidCall(str(exc)) from None
    got = _round(ctx, key, provider, model, requests, estimate, mode)
    for n in range(1, policy.rounds + 1):
        again = {k: requests[k] for k, v in got.items()
                 if isinstance(v, BatchFailure) and policy.allows(v)}
        if not again:
            break
        got.update(_round(ctx, resend_key(key, n), provider, model, again, estimate, mode))
    return got


def _round(ctx: RunningJob, key: str, provider: str, model: str, requests: Mapping[str, Any],
           estimate: Estimate | Mapping[str, Estimate], mode: str) -> dict[str, Any]:
    """One provider batch, from its reservation to its recorded answers."""
    wkey = f"{mode}:{key}"
    ctx.check()
    # one span per attempt that reaches the batch (``tracing.py``): reserved, or a journal hit
    with ctx.trace.call(ctx.id, ctx.job_stage, wkey, provider, model, None) as span:
        record = ctx.store.get_batch(ctx.id, wkey)
        if record is None:
            _ids(ctx.app.batch_adapter(adapter_name(provider, wkey)), requests)
            record = _reserve(ctx, wkey, provider, model, requests, estimate)
            span.reserved(record.reserved_usd)
        else:
            _unchanged(ctx, record, provider, model, requests)
            span.hit()
        if record.status == "submitting":
            record = _upload(ctx, record, requests)
        wait(ctx, WaitSpec(key=wkey, kind="provider_batch"))
        ctx.stats["batches_done"] += 1
        return answers(record, ctx.store.batch_answers(ctx.id, wkey))


def background(ctx: RunningJob, *, key: str, provider: str, model: str, request: Any,
               estimate: Estimate) -> Any:
    """``ctx.call(..., background=True)``: ``request`` made in the provider's background
    mode (OpenAI Responses), its id journaled before the job parks without a lease; the
    answer, or the failure raised classified as a call's would be."""
    if request is None:
        raise InvalidCall("ctx.call(background=True) needs request=: the request is what is "
                          "sent")
    got = batch(ctx, key=key, provider=provider, model=model, requests={key: request},
                estimate=estimate, mode="background")[key]
    if isinstance(got, BatchFailure):  # recorded: a retry would get it again (a new key asks)
        raise ProviderError(f"background call {key!r}: {got.error_code}: {got.error_summary}",
                            retryable=False)
    return got


def adapter_name(provider: str, key: str) -> str:
    """The adapter a batch's polls go through: a background call's is the provider's
    ``<provider>:background`` one."""
    return f"{provider}:background" if key.startswith("background:") else provider


async def abatch(ctx: RunningJob, **arguments: Any) -> dict[str, Any]:
    """``batch`` for async jobs: its store work and upload run on a thread."""
    return await asyncio.to_thread(batch, ctx, **arguments)


def answers(record: ProviderBatch, results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A settled batch's items in order (``results``: ``Store.batch_answers``): each answer,
    or a ``BatchFailure``."""
    out: dict[str, Any] = {}
    for item in record.items:
        got = results.get(item["key"]) or {"ok": False, "error_code": "no_result"}
        out[item["key"]] = got.get("value") if got.get("ok") else BatchFailure(
            key=item["key"], error_code=str(got.get("error_code") or "failed"),
            error_summary=got.get("error_summary"), retryable=bool(got.get("retryable")))
    return out


def _unchanged(ctx: RunningJob, record: ProviderBatch, provider: str, model: str,
               requests: Mapping[str, Any]) -> None:
    """A replay asking a recorded batch for something else (other items, requests, provider
    or model) pauses with ``journal_mismatch`` unless the operator chose ``reuse``: a
    recorded batch is never sent again, so ``repay`` needs a new key."""
    was = {i["key"]: i["hash"] for i in record.items}
    now = {k: request_hash(provider, model, r) for k, r in requests.items()}
    if was == now:
        return
    differs: dict[str, list[Any]] = {}
    if (record.provider, record.model) != (provider, model):
        differs["model"] = [f"{record.provider}/{record.model}", f"{provider}/{model}"]
    changed = sorted(set(was) ^ set(now) | {k for k in was.keys() & now.keys()
                                            if was[k] != now[k]})
    if changed:
        differs["items"] = [len(was), f"{len(now)} ({', '.join(changed[:5])} changed)"]
    if ctx.replay_decision() != "reuse":
        mismatch(ctx, key=record.key, stage=record.stage, differs=differs)


def _reserve(ctx: RunningJob, wkey: str, provider: str, model: str,
             requests: Mapping[str, Any],
             estimate: Estimate | Mapping[str, Estimate]) -> ProviderBatch:
    profile = ctx.app.profile_for(ctx.job)
    price = (profile.batch_price(provider, model) if wkey.startswith("batch:")
             else profile.price(provider, model))
    items: list[dict[str, Any]] = []
    for k, request in requests.items():
        est = estimate if isinstance(estimate, Estimate) else estimate.get(k)
        if not isinstance(est, Estimate):
            raise InvalidCall(f"ctx.batch needs an Estimate for item {k!r}")
        r = price.reservation(est)
        items.append({"key": k, "hash": request_hash(provider, model, request),
                      "reserved_usd": r.cost_usd, "input_tokens": r.input_tokens,
                      "output_tokens": r.output_tokens})
    tkey = tether_key(ctx.id, wkey, {i["key"]: i["hash"] for i in items})
    try:
        return ctx.store.reserve_batch(
            ctx.id, ctx.attempt, key=wkey, stage=ctx.job_stage, provider=provider, model=model,
            tether_key=tkey, items=items, price=price,
            standard=profile.price(provider, model), profile_id=profile.id)
    except ControlSignal as sig:
        ctx.lease.remember(sig)
        raise


def _ids(adapter: BatchAdapter, keys: Iterable[str]) -> dict[str, str]:
    """The ids the items are sent under (``core.batches.item_ids``): checked before the
    reservation, so a batch the provider would refuse for its keys reserves nothing."""
    try:
        return item_ids(keys, adapter.item_id)
    except ValueError as exc:
        raise InvalidCall(f"ctx.batch for {adapter.name}: {exc}") from None


def _upload(ctx: RunningJob, record: ProviderBatch,
            requests: Mapping[str, Any]) -> ProviderBatch:
    """Upload a reserved batch, or reattach to the upload of an attempt that died before
    it committed the provider's id."""
    adapter = ctx.app.batch_adapter(adapter_name(record.provider, record.key))
    remote = None
    if record.remote_status is not None:  # an earlier attempt began its upload
        if not adapter.reattach:
            return ctx.store.batch_unconfirmed(
                ctx.id, ctx.attempt, record.key,
                f"{record.provider} offers no way to find a batch whose id was not recorded; "
                "it was not uploaded again")
        remote = adapter.find(record.tether_key, since=record.created_at.timestamp())
    if remote is None:
        ctx.check()
        if record.remote_status is None:
            ctx.store.batch_uploading(ctx.id, ctx.attempt, record.key)
        try:
            ids = _ids(adapter, [i["key"] for i in record.items])
            remote = adapter.submit(tether_key=record.tether_key, model=record.model,
                                    requests={ids[i["key"]]: requests[i["key"]]
                                              for i in record.items})
        except Exception as exc:
            mapped = classify_exception(exc)
            if getattr(exc, "status_code", None) is not None:  # the provider answered: not taken
                ctx.store.batch_refused(ctx.id, ctx.attempt, record.key,
                                        getattr(mapped, "code", "refused"))
            if isinstance(mapped, ControlSignal):
                ctx.lease.remember(mapped)
            if mapped is exc:
                raise
            raise mapped from exc
    return ctx.store.batch_submitted(ctx.id, ctx.attempt, record.key, remote,
                                     first_poll_s=adapter.first_poll_s)
