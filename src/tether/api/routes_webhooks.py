"""``/api/v1/webhooks`` and ``/api/v1/deliveries``: subscribe URLs to events, list and delete
subscriptions, see deliveries with their attempts, re-send one (docs/alerts.md, "Webhooks").

Scoped by project like the jobs routes: a project token sees its projects' subscriptions and
deliveries only (others answer 404 ``webhook_not_found``) and subscribes only in them (403);
a subscription to every project (no ``project``) is an admin's. A refused target is 422
``webhook_target_refused``; a re-send of a delivery still being sent is 409.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from ..app import Tether
from ..wire.problems import Problem
from ..wire.webhooks import (
    DeliveryList, DeliveryOut, DeliveryState, WebhookCreate, WebhookCreated, WebhookList,
    WebhookOut,
)
from .auth import Principal, principal
from .openapi import problem_responses as _errors
from .routes_jobs import tether

router = APIRouter(tags=["webhooks"])

Id = Annotated[str, Path(min_length=1, max_length=100, description="subscription id")]
DeliveryId = Annotated[str, Path(min_length=1, max_length=100, description="delivery id")]


@router.get("/webhooks", response_model=WebhookList, responses=_errors(403),
            summary="Webhook subscriptions (without their secrets)")
def list_webhooks(who: Principal = Depends(principal), app: Tether = Depends(tether),
                  project: Annotated[str | None, Query(min_length=1, max_length=200)] = None
                  ) -> WebhookList:
    if project is not None and not who.allows(project):
        raise Problem(403, "forbidden", f"this token may not read project {project!r}")
    return WebhookList(items=[WebhookOut.of(s) for s in
                              app.webhooks(project=project, projects=who.scope)])


@router.post("/webhooks", status_code=201, response_model=WebhookCreated,
             responses=_errors(403), summary="Subscribe a URL to event kinds",
             description="The answer carries the signing secret, shown only here.")
def create_webhook(body: WebhookCreate, response: Response,
                   who: Principal = Depends(principal),
                   app: Tether = Depends(tether)) -> WebhookCreated:
    project = (None if body.project is None and who.scope is None
               else who.write_project(body.project, where="body"))
    sub = app.add_webhook(body.url, body.kinds, project=project,
                          description=body.description, projects=who.scope)
    response.headers["Location"] = f"/api/v1/webhooks/{sub.id}"
    return WebhookCreated.of(sub)


@router.get("/webhooks/{sub_id}", response_model=WebhookOut, responses=_errors(404),
            summary="Get a subscription")
def get_webhook(sub_id: Id, who: Principal = Depends(principal),
                app: Tether = Depends(tether)) -> WebhookOut:
    return WebhookOut.of(app.get_webhook(sub_id, projects=who.scope))


@router.delete("/webhooks/{sub_id}", response_model=WebhookOut, responses=_errors(404),
               summary="Delete a subscription (its deliveries stay); returns it as it was")
def delete_webhook(sub_id: Id, who: Principal = Depends(principal),
                   app: Tether = Depends(tether)) -> WebhookOut:
    return WebhookOut.of(app.delete_webhook(sub_id, projects=who.scope))


@router.get("/deliveries", response_model=DeliveryList, summary="Webhook deliveries, newest first",
            description="Without attempts; `GET /deliveries/{id}` has them. `state=failed`: "
                        "the dead letters.")
def list_deliveries(who: Principal = Depends(principal), app: Tether = Depends(tether),
                    webhook: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
                    state: DeliveryState | None = None,
                    limit: Annotated[int, Query(ge=1, le=500)] = 50) -> DeliveryList:
    return DeliveryList(items=[DeliveryOut.of(d) for d in app.deliveries(
        webhook=webhook, state=state, limit=limit, projects=who.scope)])


@router.get("/deliveries/{delivery_id}", response_model=DeliveryOut, responses=_errors(404),
            summary="A delivery with every attempt")
def get_delivery(delivery_id: DeliveryId, who: Principal = Depends(principal),
                 app: Tether = Depends(tether)) -> DeliveryOut:
    return DeliveryOut.of(app.delivery(delivery_id, projects=who.scope))


@router.post("/deliveries/{delivery_id}/resend", response_model=DeliveryOut,
             responses=_errors(404, 409), summary="Send a delivered or dead delivery again",
             description="The same webhook-id and body, a new delivery job.")
def resend_delivery(delivery_id: DeliveryId, who: Principal = Depends(principal),
                    app: Tether = Depends(tether)) -> DeliveryOut:
    return DeliveryOut.of(app.resend(delivery_id, projects=who.scope))
