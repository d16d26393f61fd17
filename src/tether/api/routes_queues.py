"""``/api/v1/queues``, ``/api/v1/workers`` and ``/api/v1/rate-limits``: operator routes
(admin tokens only, else 403).

Queue counts, workers and shared rate limits span every project, so a project token may not
read them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from ..app import Tether
from .auth import Principal, admin
from .openapi import problem_responses
from .routes_jobs import tether
from ..wire.models import QueueList, QueueOut, WorkerList, WorkerOut
from ..wire.ratelimits import RateScopeList, RateScopeOut

router = APIRouter(tags=["operators"])

QueueName = Annotated[str, Path(min_length=1, max_length=200, description="queue name")]


@router.get("/queues", response_model=QueueList, responses=problem_responses(403),
            summary="Queues with their job counts by state")
def list_queues(_: Principal = Depends(admin), app: Tether = Depends(tether)) -> QueueList:
    return QueueList(items=[QueueOut.of(q) for q in app.queues()])


@router.post("/queues/{name}/pause", response_model=QueueOut,
             responses=problem_responses(403, 404),
             summary="Pause a queue: workers stop claiming from it (running jobs go on)",
             description="Only a queue that exists (a job was submitted to it) or that a "
                         "registered job type declares; any other name is 404 `queue_not_found`.")
def pause_queue(name: QueueName, _: Principal = Depends(admin),
                app: Tether = Depends(tether)) -> QueueOut:
    return QueueOut.of(app.pause_queue(name))


@router.post("/queues/{name}/resume", response_model=QueueOut,
             responses=problem_responses(403, 404),
             summary="Resume a paused queue")
def resume_queue(name: QueueName, _: Principal = Depends(admin),
                 app: Tether = Depends(tether)) -> QueueOut:
    return QueueOut.of(app.resume_queue(name))


@router.get("/workers", response_model=WorkerList, responses=problem_responses(403),
            summary="Workers that have not stopped, with the leases they hold")
def list_workers(_: Principal = Depends(admin), app: Tether = Depends(tether)) -> WorkerList:
    return WorkerList(items=[WorkerOut.of(w) for w in app.workers()])


@router.get("/rate-limits", response_model=RateScopeList, responses=problem_responses(403),
            summary="Shared rate-limit scopes: calls in the last minute, and what each "
                    "scope's provider last said is left")
def list_rate_limits(_: Principal = Depends(admin),
                     app: Tether = Depends(tether)) -> RateScopeList:
    return RateScopeList(items=[RateScopeOut.of(s) for s in app.rate_scopes()])
