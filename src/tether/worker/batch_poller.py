"""The batch poller: each worker's sweep polls the provider batches whose next poll is due.

A step takes up to ``limit`` due batches (``Store.claim_due_batches`` moves their next poll
out first, so two workers do not poll one batch at once), asks each batch's provider how it
is doing, and either records the poll (the next one backs off: ``core/batches.py``) or, when
the batch has ended, fetches its results and settles it: every item at the batch price and
the job woken, in one transaction (``Store.settle_batch``). A poll that fails is logged and
tried again at the next backoff; the batch and its reservation stay as they were.

A batch whose job was cancelled is cancelled at the provider first, then settled as usual:
what the provider finished before the cancel is paid and in the ledger, the rest refunded.
A paused job's batch runs on: it is settled when it ends, and the job's resume finds it.

A batch reserved but not known to be at the provider (``submitting``) whose job ended (a crash
before the id was committed, then a cancel or a last failed attempt) is an orphan: no replay
will settle it, so the sweep does (``orphans``).
"""

from __future__ import annotations

import logging
from typing import Protocol

from ..core.batches import RemoteStatus, item_ids
from ..core.states import JobState
from ..job.batches import adapter_name
from ..providers.batches import BatchAdapter
from ..store.base import Store

log = logging.getLogger("tether.batches")
_CANCELLED = frozenset({"cancelling", "cancelled", "canceling", "canceled"})


class BatchHost(Protocol):
    def batch_adapter(self, provider: str) -> BatchAdapter: ...


class BatchPoller:
    def __init__(self, store: Store, host: BatchHost, *, interval: float) -> None:
        self.store = store
        self.host = host
        self.interval = interval
        self._next = 0.0

    def run_once(self, *, now: float | None = None, limit: int = 20) -> int:
        """Settle the orphaned batches, then poll the due ones; returns how many were
        settled."""
        settled = self.orphans(now=now, limit=limit)
        for batch in self.store.claim_due_batches(now=now, limit=limit):
            if batch.remote_id is None:
                continue
            try:
                adapter = self.host.batch_adapter(adapter_name(batch.provider, batch.key))
                if batch.remote_status not in _CANCELLED and self._cancelled(batch.job_id):
                    adapter.cancel(batch.remote_id)
                    log.info("job %s cancelled: batch %s (%s) cancelled at the provider",
                             batch.job_id, batch.key, batch.remote_id)
                status = adapter.poll(batch.remote_id)
                if not status.ended:
                    self.store.batch_polled(batch.job_id, batch.key, status, now=now)
                    continue
                sent = item_ids([i["key"] for i in batch.items], adapter.item_id)
                back = {v: k for k, v in sent.items()}
                results = {back.get(cid, cid): r
                           for cid, r in adapter.results(batch.remote_id).items()}
            except Exception as exc:  # noqa: BLE001 - a failed poll is tried again later
                log.warning("job %s: polling batch %s (%s) failed: %s", batch.job_id,
                            batch.key, batch.remote_id, exc)
                self.store.batch_polled(batch.job_id, batch.key,
                                        RemoteStatus("poll_failed", False,
                                                     batch.items_done, batch.items_failed),
                                        now=now)
                continue
            if self.store.settle_batch(batch.job_id, batch.key, status, results, now=now):
                settled += 1
                log.info("job %s: batch %s settled (%d done, %d failed)", batch.job_id,
                         batch.key, status.done, status.failed)
        return settled

    def orphans(self, *, now: float | None = None, limit: int = 20) -> int:
        """The batches reserved but not known to be at the provider whose jobs ended: never
        sent, their reservations go back; sent (found by their key), they are polled, and a
        cancelled job's is cancelled at the provider; from a provider that cannot be asked,
        spent unconfirmed. Returns how many were released or spent."""
        done = 0
        for batch in self.store.orphaned_batches(limit=limit):
            try:
                remote = None
                if batch.remote_status is not None:
                    adapter = self.host.batch_adapter(adapter_name(batch.provider, batch.key))
                    if not adapter.reattach:
                        self.store.batch_unconfirmed(
                            batch.job_id, None, batch.key,
                            f"{batch.provider} offers no way to find a batch whose id was "
                            "not recorded; its job ended", now=now)
                        done += 1
                        continue
                    remote = adapter.find(batch.tether_key,
                                          since=batch.created_at.timestamp())
                if remote is not None:
                    self.store.batch_submitted(batch.job_id, None, batch.key, remote,
                                               first_poll_s=0, now=now)
                    log.info("job %s ended: its batch %s was found at the provider (%s)",
                             batch.job_id, batch.key, remote)
                elif self.store.batch_refused(batch.job_id, None, batch.key,
                                              "job_ended_unsent", now=now):
                    done += 1
                    log.info("job %s ended: its batch %s was never sent; reservation "
                             "released", batch.job_id, batch.key)
            except Exception as exc:  # noqa: BLE001 - the next sweep tries again
                log.warning("job %s: settling the unsent batch %s failed: %s", batch.job_id,
                            batch.key, exc)
        return done

    def _cancelled(self, job_id: int) -> bool:
        job = self.store.get_job(job_id)
        return job is None or job.state in (JobState.CANCELLED, JobState.CANCELLING)

    def due(self, monotonic_now: float) -> bool:
        if monotonic_now >= self._next:
            self._next = monotonic_now + self.interval
            return True
        return False
