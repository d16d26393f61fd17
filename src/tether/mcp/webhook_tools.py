"""Webhooks over MCP: the REST API's ``/webhooks`` and ``/deliveries`` routes (subscribe,
list, get, delete; deliveries with their attempts; re-send).

Scoped like jobs: a project token sees and acts on its own projects' subscriptions and
deliveries only (others are ``webhook_not_found``, like ones that do not exist) and
subscribes only in them (``forbidden``); a subscription to every project is an admin's.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from ..app import Tether
from ..wire.problems import Problem
from ..wire.webhooks import (
    DeliveryList, DeliveryOut, DeliveryState, Kind, WebhookCreate, WebhookCreated, WebhookList,
    WebhookOut,
)
from .arguments import Name, PrincipalFor
from .strict import strict_tool


def _about(field: str) -> str:
    """The REST request's description of ``field``, so both interfaces say the same."""
    return WebhookCreate.model_fields[field].description or field.replace("_", " ")


Id = Annotated[str, Field(min_length=1, max_length=100)]
SubId = Annotated[Id, Field(description="the subscription id (sub_...)")]
DeliveryId = Annotated[Id, Field(description="the delivery id (msg_...): its webhook-id")]


def webhook_tools(app: Tether, principal_for: PrincipalFor) -> list[Tool]:
    """The webhook tools, bound to ``app``."""

    def create_webhook(
        ctx: Context,
        url: Annotated[str, Field(min_length=1, max_length=2000, description=_about("url"))],
        kinds: Annotated[list[Kind], Field(min_length=1, max_length=6,
                                           description="the event kinds to receive")],
        project: Annotated[Name | None, Field(description=_about("project"))] = None,
        description: Annotated[str, Field(max_length=500, description="a note for people")]
        = "",
    ) -> WebhookCreated:
        who = principal_for(ctx)
        chosen = (None if project is None and who.scope is None
                  else who.write_project(project, where="arguments"))
        return WebhookCreated.of(app.add_webhook(url, kinds, project=chosen,
                                                 description=description, projects=who.scope))

    def list_webhooks(
        ctx: Context,
        project: Annotated[Name | None, Field(description="only this project")] = None,
    ) -> WebhookList:
        who = principal_for(ctx)
        if project is not None and not who.allows(project):
            raise Problem(403, "forbidden", f"this token may not read project {project!r}")
        return WebhookList(items=[WebhookOut.of(s) for s in
                                  app.webhooks(project=project, projects=who.scope)])

    def delete_webhook(ctx: Context, webhook: SubId) -> WebhookOut:
        return WebhookOut.of(app.delete_webhook(webhook, projects=principal_for(ctx).scope))

    def list_deliveries(
        ctx: Context,
        webhook: Annotated[Id | None, Field(description="only this subscription's")] = None,
        state: Annotated[DeliveryState | None, Field(
            description="the delivery job's state; failed: dead letters")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="at most this many")] = 50,
    ) -> DeliveryList:
        return DeliveryList(items=[DeliveryOut.of(d) for d in app.deliveries(
            webhook=webhook, state=state, limit=limit, projects=principal_for(ctx).scope)])

    def get_delivery(ctx: Context, delivery: DeliveryId) -> DeliveryOut:
        return DeliveryOut.of(app.delivery(delivery, projects=principal_for(ctx).scope))

    def resend_delivery(ctx: Context, delivery: DeliveryId) -> DeliveryOut:
        return DeliveryOut.of(app.resend(delivery, projects=principal_for(ctx).scope))

    return [
        strict_tool(create_webhook, "tether_create_webhook", (
            "Subscribe an http(s) URL to event kinds (job.succeeded, job.failed, "
            "job.budget_paused, job.waiting_signal, budget.threshold_crossed, "
            "schedule.missed). Returns the subscription with its signing secret, shown only "
            "here.")),
        strict_tool(list_webhooks, "tether_list_webhooks", (
            "Webhook subscriptions (without their secrets)."), read_only=True),
        strict_tool(delete_webhook, "tether_delete_webhook", (
            "Delete a subscription; its deliveries stay. Returns it as it was."),
            destructive=True, idempotent=True),
        strict_tool(list_deliveries, "tether_list_deliveries", (
            "Webhook deliveries, newest first, without attempts."), read_only=True),
        strict_tool(get_delivery, "tether_get_delivery", (
            "A webhook delivery with every attempt (HTTP status or error)."), read_only=True),
        strict_tool(resend_delivery, "tether_resend_delivery", (
            "Send a delivered or dead delivery again: the same webhook-id and body, a new "
            "delivery job. Refused (invalid_transition) while it is still being sent.")),
    ]
