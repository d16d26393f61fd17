"""Webhooks in the store: subscriptions, the outbox step that turns events into delivery
jobs, deliveries and their attempts, and a re-send.

The outbox is a cursor over the live feed (``feed.py``: every event, in an order that a
position resumes exactly after) plus the ``schedule_misses`` rows not yet dispatched. One
step reads the events after the cursor, and then, in ONE write transaction, checks the
cursor has not moved (another worker's step got there first: this one writes nothing),
inserts a delivery row and a delivery job for each (subscription, event) pair, and moves
the cursor. Each delivery job's idempotency key is ``webhook:<delivery id>:1``, the id
derived from the pair, so even two steps that both wrote would make one job. A crash before
the commit leaves the cursor where it was and the next step does the same work: an event
is delivered at least once, and made into a delivery exactly once.

Why a cursor and not an insert beside each event: events are appended by a dozen statements
on the hot path (claims, finishes, waits; some written as one SQL statement for many jobs),
and most events are no webhook's business; a cursor keeps the hot path as it is. A step
that finds nothing new only reads; while no subscription exists a step is one read, and the
first subscription moves the cursor to the newest event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.budget import Budget
from ..core.serialize import config_hash, dumps
from ..core.webhooks import (
    DELIVERY_QUEUE, DELIVERY_TYPE, SCHEDULE_MISSED, Delivery, DeliveryAttempt, OutboxStep,
    Subscription, delivery_id, public_kind,
)
from ..errors import JobStateError, WebhookNotFound
from .base import NewJob
from .feed import FEED_START, Feed, feed_position
from .jobs import Jobs
from .rows import as_datetime, load_json
from .tx import Row, Tx, present

_Made = tuple[Subscription, str, str, dict[str, Any]]
"""One delivery to make: subscription, event reference, public kind, body."""

DEFAULT_DELIVERY_ATTEMPTS = 15
"""Tries of one sending before its delivery is dead (full-jitter backoff between them)."""


def to_subscription(row: Row) -> Subscription:
    return Subscription(id=row["id"], project=row["project"], url=row["url"],
                        kinds=tuple(load_json(row["kinds"])), secret=row["secret"],
                        description=row["description"],
                        created_at=as_datetime(row["created_at"]))


def _attempt(row: Row) -> DeliveryAttempt:
    return DeliveryAttempt(n=int(row["n"]), job_id=int(row["job_id"]),
                           at=as_datetime(row["at"]), status=row["status"], error=row["error"],
                           duration_ms=float(row["duration_ms"]))


def _delivery(row: Row, attempts: Sequence[Row] = ()) -> Delivery:
    return Delivery(id=row["id"], subscription_id=row["subscription_id"],
                    project=row["project"], kind=row["kind"], url=row["url"],
                    job_id=int(row["job_id"]), sends=int(row["sends"]),
                    state=row["state"] or "pruned", body=load_json(row["body"]),
                    created_at=as_datetime(row["created_at"]),
                    attempts=[_attempt(a) for a in attempts])


def delivery_job(delivery: str, project: str, send: int, max_attempts: int) -> NewJob:
    """The job that sends ``delivery`` (its ``send``-th sending: 1, then one per re-send)."""
    payload = {"delivery": delivery}
    return NewJob(type=DELIVERY_TYPE, payload_json=dumps(payload), project=project,
                  queue=DELIVERY_QUEUE, priority=0, run_after=None,
                  max_attempts=max_attempts, safe_to_retry=True,
                  idempotency_key=f"webhook:{delivery}:{send}",
                  input_config_hash=config_hash({"type": DELIVERY_TYPE, "payload": payload,
                                                 "project": project}),
                  budget=Budget())


def _matches(sub: Subscription, kind: str, project: str, at: float) -> bool:
    return (kind in sub.kinds and (sub.project is None or sub.project == project)
            and at >= sub.created_at.timestamp())


class Webhooks(Jobs, Feed):
    """Subscriptions, the outbox step, deliveries."""

    # --- subscriptions ------------------------------------------------------------------------

    def put_webhook(self, sub: Subscription) -> Subscription:
        """Store it (``created_at`` by the store's clock). The first subscription moves the
        outbox cursor to the newest event and marks pending schedule misses dispatched:
        while none exists the outbox only reads, and what happened before is not sent."""
        with self._write() as tx:
            now = self._now(tx, None)
            if not tx.all("webhook_list", projects=None):
                head = tx.one("event_feed_head", **self._feed_bounds(tx))
                tx.run("webhook_cursor_set",
                       position=FEED_START if head is None else feed_position(head))
                self._dispatch_misses(tx, 10_000, now)
            tx.run("webhook_insert", id=sub.id, project=sub.project, url=sub.url,
                   kinds=self._json_param(list(sub.kinds)), secret=sub.secret,
                   description=sub.description, now=now)
            return to_subscription(present(tx.one("webhook_get", id=sub.id)))

    def list_webhooks(self, *, projects: Iterable[str] | None = None) -> list[Subscription]:
        """Every subscription; with ``projects``, those of these projects (an admin-wide
        subscription, project None, is an admin's only)."""
        with self._read() as tx:
            rows = tx.all("webhook_list", projects=self._list_param(projects))
        return [to_subscription(r) for r in rows]

    def get_webhook(self, sub_id: str, *,
                    projects: Iterable[str] | None = None) -> Subscription | None:
        with self._read() as tx:
            row = tx.one("webhook_get", id=sub_id)
        if row is None or (projects is not None and row["project"] not in set(projects)):
            return None
        return to_subscription(row)

    def delete_webhook(self, sub_id: str, *,
                       projects: Iterable[str] | None = None) -> Subscription:
        """Delete it; deliveries already made stay (and may still be sent)."""
        with self._write() as tx:
            row = tx.one("webhook_get", id=sub_id)
            if row is None or (projects is not None and row["project"] not in set(projects)):
                raise WebhookNotFound(f"webhook {sub_id!r} not found", webhook=sub_id)
            tx.run("webhook_delete", id=sub_id)
        return to_subscription(row)

    # --- the outbox step ----------------------------------------------------------------------

    def webhook_step(self, *, now: float | None = None, limit: int = 500,
                     max_attempts: int = DEFAULT_DELIVERY_ATTEMPTS) -> OutboxStep:
        """One outbox step over up to ``limit`` events and ``limit`` schedule misses: the
        deliveries (and their jobs) it made, and whether more were waiting. A step with
        nothing new (most of them) only reads."""
        with self._read() as tx:
            subs = [to_subscription(r) for r in tx.all("webhook_list", projects=None)]
            if not subs:
                return OutboxStep(0, False)
            position = present(tx.one("webhook_cursor_get"))["position"]
            missed = tx.one("schedule_misses_any") is not None
        events = self.feed(after=position or None, limit=limit)
        if not events and not missed:
            return OutboxStep(0, False)
        ids = sorted({e.event.job_id for e in events})
        with self._read() as tx:
            jobs = {int(r["id"]): r for r in tx.all("webhook_event_jobs",
                                                    ids=self._array_param(ids))} if ids else {}
        made: list[_Made] = []
        for fe in events:
            ev, job = fe.event, jobs.get(fe.event.job_id)
            kind = None if job is None else public_kind(ev.kind, ev.to_state, ev.data,
                                                         job["type"])
            if kind is None or job is None:
                continue
            body = _job_body(ev.to_dict(), job)
            made.extend((sub, f"event:{ev.job_id}:{ev.seq}", kind, body) for sub in subs
                        if _matches(sub, kind, fe.project, ev.at.timestamp()))
        with self._write() as tx:
            now = self._now(tx, now)
            if present(tx.one("webhook_cursor_lock"))["position"] != position:
                return OutboxStep(0, True)
            misses = self._dispatch_misses(tx, limit, now)
            for miss in misses:
                body = _miss_body(miss)
                made.extend((sub, f"miss:{miss['id']}", SCHEDULE_MISSED, body) for sub in subs
                            if _matches(sub, SCHEDULE_MISSED, miss["project"], now))
            self._make_deliveries(tx, made, now, max_attempts)
            if events:
                tx.run("webhook_cursor_set", position=events[-1].position)
        return OutboxStep(len(made), len(events) >= limit or len(misses) >= limit)

    def _dispatch_misses(self, tx: Tx, limit: int, now: float) -> list[Row]:
        misses = tx.all("schedule_misses_pending", limit=limit)
        if misses:
            tx.run("schedule_misses_dispatched",
                   ids=self._array_param([int(m["id"]) for m in misses]), now=now)
        return misses

    def _make_deliveries(self, tx: Tx, made: Sequence[_Made], now: float,
                         max_attempts: int) -> None:
        """A delivery row and job for each (subscription, event); a pair already made (its
        job's key exists) makes nothing."""
        rows, jobs = [], []
        for sub, ref, kind, body in made:
            did = delivery_id(sub.id, ref)
            project = body["data"].get("project") or sub.project or "default"
            jobs.append(delivery_job(did, project, 1, max_attempts))
            rows.append({"id": did, "subscription_id": sub.id, "project": project,
                         "owner": sub.project, "kind": kind, "url": sub.url,
                         "body": dumps({"type": kind, "timestamp": body["timestamp"],
                                        "data": body["data"]})})
        for row, job in zip(rows, self._insert_jobs(tx, jobs, now), strict=True):
            if job is not None:
                tx.run("webhook_delivery_insert", **row, job_id=job.id, now=now)

    # --- deliveries ---------------------------------------------------------------------------

    def webhook_deliveries(self, *, subscription_id: str | None = None,
                           projects: Iterable[str] | None = None, state: str | None = None,
                           limit: int = 50) -> list[Delivery]:
        """Newest first, without their attempts (``get_delivery`` has them). With
        ``projects``, those of subscriptions of these projects (an admin-wide
        subscription's deliveries are an admin's), as for every read of deliveries."""
        with self._read() as tx:
            rows = tx.all("webhook_deliveries", subscription_id=subscription_id,
                          projects=self._list_param(projects), state=state, limit=limit)
        return [_delivery(r) for r in rows]

    def get_delivery(self, delivery: str, *,
                     projects: Iterable[str] | None = None) -> Delivery | None:
        with self._read() as tx:
            row = tx.one("webhook_delivery_get", id=delivery)
            if row is None or (projects is not None and row["owner"] not in set(projects)):
                return None
            return _delivery(row, tx.all("webhook_attempts", id=delivery))

    def record_webhook_attempt(self, delivery: str, job_id: int, *, status: int | None,
                               error: str | None, duration_ms: float) -> None:
        """One HTTP try, numbered after the delivery's earlier tries."""
        with self._write() as tx:
            tx.run("webhook_attempt_insert", id=delivery, job_id=job_id, status=status,
                   error=error, duration_ms=duration_ms, now=self._now(tx, None))

    def resend_delivery(self, delivery: str, *, projects: Iterable[str] | None = None,
                        max_attempts: int = DEFAULT_DELIVERY_ATTEMPTS) -> Delivery:
        """Send it again with a new delivery job: same ``webhook-id``, same body. Refused
        (``invalid_transition``) while its current job is still pending."""
        with self._write() as tx:
            now = self._now(tx, None)
            row = tx.one("webhook_delivery_lock", id=delivery)
            if row is None or (projects is not None and row["owner"] not in set(projects)):
                raise WebhookNotFound(f"delivery {delivery!r} not found", delivery=delivery)
            if row["state"] not in ("succeeded", "failed", "cancelled", None):
                raise JobStateError(f"delivery {delivery!r} is still being sent "
                                    f"(job {row['job_id']} is {row['state']})",
                                    job_id=row["job_id"], state=row["state"])
            sends = int(row["sends"]) + 1
            job = self._insert_jobs(tx, [delivery_job(delivery, row["project"], sends,
                                                      max_attempts)], now)[0]
            if job is not None:
                tx.run("webhook_delivery_resent", id=delivery, job_id=job.id, sends=sends)
        found = self.get_delivery(delivery)
        assert found is not None
        return found


def _job_body(event: dict[str, Any], job: Row) -> dict[str, Any]:
    data = {"project": job["project"],
            "job": {"id": int(job["id"]), "type": job["type"], "project": job["project"],
                    "queue": job["queue"], "state": event.get("to_state") or job["state"],
                    "error_code": job["error_code"], "error_summary": job["error_summary"],
                    "attempt": event.get("attempt")},
            "event": {"seq": event["seq"], "kind": event["kind"], "at": event["at"],
                      "data": event.get("data") or {}}}
    return {"timestamp": event["at"], "data": data}


def _miss_body(miss: Row) -> dict[str, Any]:
    at, first, last = (as_datetime(miss[k]) for k in ("at", "first_tick", "last_tick"))
    assert at is not None and first is not None and last is not None
    return {"timestamp": at.isoformat(),
            "data": {"project": miss["project"], "schedule": miss["schedule"],
                     "missed": int(miss["missed"]), "first_missed": first.isoformat(),
                     "last_missed": last.isoformat()}}
