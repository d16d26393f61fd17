"""Webhooks on the facade: subscribe a URL to event kinds, list and delete subscriptions,
see deliveries and their attempts, re-send one, and run one outbox step. Every interface
(CLI, REST, MCP, dashboard) calls these; docs/alerts.md ("Webhooks") describes the whole.

A subscription belongs to a project, or with ``project=None`` to every project (an
admin's: a caller limited to ``projects`` may not make or see one). Its URL is checked
against the app's ``WebhookSettings`` when it is made (and again before every try).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..clock import utc
from ..core import validate
from ..core.webhooks import (
    Delivery, Subscription, check_kinds, new_secret, new_subscription_id,
)
from ..errors import InvalidArgument, WebhookNotFound
from ..submission import checked_name
from .host import FacadeHost
from .webhook_delivery import WebhookSettings

OUTBOX_PAGE = 500
"""Events (and schedule misses) one outbox step takes at most."""

OUTBOX_PAGES = 20
"""Outbox steps one call runs at most: a backlog drains at up to 10,000 events a call, and a
call still ends."""

DELIVERY_STATES = ("queued", "running", "retry_wait", "succeeded", "failed", "cancelled")


class WebhooksPart(FacadeHost):
    """The webhook methods of ``Tether``."""

    webhook_settings: WebhookSettings

    def add_webhook(self, url: str, kinds: Iterable[str], *, project: str | None = None,
                    description: str = "",
                    projects: Iterable[str] | None = None) -> Subscription:
        """Subscribe ``url`` to ``kinds`` (``core.webhooks.KINDS``) of ``project`` (None:
        every project). The result carries the signing secret; listings never do."""
        if project is None:
            if projects is not None:
                raise InvalidArgument("a subscription to every project is an admin's; name "
                                      "a project", argument="project")
        else:
            checked_name(project, "project")
            if projects is not None and project not in set(projects):
                raise InvalidArgument(f"project {project!r} is outside your scope",
                                      argument="project")
        validate.text(description, "description")
        wanted = check_kinds(kinds)
        self.webhook_settings.check(url)
        sub = Subscription(id=new_subscription_id(), project=project, url=url, kinds=wanted,
                           secret=new_secret(), description=description or "",
                           created_at=utc(self.clock.time()))
        return self.store.put_webhook(sub)

    def webhooks(self, *, project: str | None = None,
                 projects: Iterable[str] | None = None) -> list[Subscription]:
        """Subscriptions, oldest first (of ``project``; within ``projects``)."""
        scope = None if projects is None else set(projects)
        if project is not None:
            checked_name(project, "project")
            scope = {project} if scope is None else scope & {project}
        return self.store.list_webhooks(projects=scope)

    def get_webhook(self, sub_id: str, *,
                    projects: Iterable[str] | None = None) -> Subscription:
        found = self.store.get_webhook(_id(sub_id), projects=projects)
        if found is None:
            raise WebhookNotFound(f"webhook {sub_id!r} not found", webhook=sub_id)
        return found

    def delete_webhook(self, sub_id: str, *,
                       projects: Iterable[str] | None = None) -> Subscription:
        """Delete a subscription: no new deliveries; pending ones then fail at their next
        try. Returns it as it was."""
        return self.store.delete_webhook(_id(sub_id), projects=projects)

    def deliveries(self, *, webhook: str | None = None, state: str | None = None,
                   limit: int = 50, projects: Iterable[str] | None = None) -> list[Delivery]:
        """Deliveries, newest first, of one subscription or all; ``state`` is the delivery
        job's (``failed``: dead letters)."""
        if state is not None and state not in DELIVERY_STATES:
            raise InvalidArgument(f"state must be one of {', '.join(DELIVERY_STATES)}",
                                  argument="state")
        return self.store.webhook_deliveries(
            subscription_id=None if webhook is None else _id(webhook), projects=projects,
            state=state, limit=validate.count(limit, "limit"))

    def delivery(self, delivery: str, *, projects: Iterable[str] | None = None) -> Delivery:
        """One delivery with every attempt."""
        found = self.store.get_delivery(_id(delivery), projects=projects)
        if found is None:
            raise WebhookNotFound(f"delivery {delivery!r} not found", delivery=delivery)
        return found

    def resend(self, delivery: str, *, projects: Iterable[str] | None = None) -> Delivery:
        """Send a delivered or dead delivery again: the same ``webhook-id`` and body, a new
        delivery job with ``max_attempts`` fresh tries."""
        return self.store.resend_delivery(_id(delivery), projects=projects,
                                          max_attempts=self.webhook_settings.max_attempts)

    def webhook_step(self, *, now: float | None = None) -> int:
        """Outbox steps (workers run this every second) until none finds more waiting, at
        most ``OUTBOX_PAGES`` of them: the deliveries they made."""
        made = 0
        for _ in range(OUTBOX_PAGES):
            step = self.store.webhook_step(now=now, limit=OUTBOX_PAGE,
                                           max_attempts=self.webhook_settings.max_attempts)
            made += step.made
            if not step.more:
                break
        return made


def _id(value: str) -> str:
    if (not isinstance(value, str) or not value or len(value) > 100 or not value.isascii()
            or not value.isprintable()):
        raise InvalidArgument(f"not an id: {value!r}", argument="id")
    return value
