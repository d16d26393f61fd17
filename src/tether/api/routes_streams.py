"""Live event streams over Server-Sent Events (``text/event-stream``).

``GET /jobs/{id}/events/stream`` sends one job's events (``id:`` = the seq) and ends once the
job is terminal and all its events are sent; ``GET /events/stream`` sends every event of the
token's projects, or of ``?project=`` (``id:`` = a feed position), and never ends. Both resume
after the ``Last-Event-ID`` header (what a browser's ``EventSource`` sends when it reconnects)
or ``?after=``; the header wins. The logic is ``api/stream_hub.py``; a job of another project
answers 404 before any byte is streamed, and a token over its cap of open streams 429.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from ..app import Tether
from ..core import validate
from ..store.feed import parse_position
from ..wire.numbers import INT63
from ..wire.problems import Problem
from .stream_hub import HEADERS, MEDIA_TYPE, StreamHub
from .auth import Principal, principal
from .openapi import problem_responses as _errors
from .routes_jobs import JobId, tether

router = APIRouter(tags=["streams"])

_STREAM: dict[int | str, dict[str, Any]] = {
    200: {"description": "a Server-Sent Events stream",
          "content": {MEDIA_TYPE: {"schema": {"type": "string"}}}}}
LastEventId = Annotated[str | None, Header(
    alias="Last-Event-ID", max_length=200,
    description="resume after this event (the last `id:` received); wins over ?after")]


def streams(request: Request) -> StreamHub:
    return request.app.state.streams


def _bad(name: str, text: str) -> Problem:
    where = "header" if name == "Last-Event-ID" else "query"
    return Problem(422, "invalid_argument", f"{name}: {text}", argument=name,
                   errors=[{"field": name, "in": where, "message": text}])


def _respond(body, slot) -> StreamingResponse:  # noqa: ANN001 - an async iterator, a StreamSlot
    return StreamingResponse(body, media_type=MEDIA_TYPE, headers=HEADERS,
                             background=BackgroundTask(slot.release))


@router.get("/jobs/{job_id}/events/stream", response_class=StreamingResponse,
            summary="Follow a job's events live (Server-Sent Events)",
            description="Each message: `id:` the event's seq, `event:` its kind, `data:` the "
                        "event as GET /jobs/{id}/events returns it. Starts after `?after=` or "
                        "`Last-Event-ID` (default: the first event), ends once the job is "
                        "terminal and every event is sent; `: keep-alive` comments in between.",
            responses={**_STREAM, **_errors(404, 422, 429)})
async def job_event_stream(
    job_id: JobId, who: Principal = Depends(principal), app: Tether = Depends(tether),
    hub: StreamHub = Depends(streams), last_event_id: LastEventId = None,
    after: Annotated[int | None, Query(ge=0, le=INT63,
                                       description="the seq to start after")] = None,
) -> StreamingResponse:
    start = after or 0
    if last_event_id is not None:
        try:
            start = int(last_event_id)
        except ValueError:
            raise _bad("Last-Event-ID", "not an event seq of this stream") from None
        if not 0 <= start <= INT63:
            raise _bad("Last-Event-ID", "not an event seq of this stream")
    await run_in_threadpool(app.get, job_id, projects=who.scope)
    slot = hub.acquire(who.id)
    return _respond(hub.job_stream(job_id, after=start, slot=slot, token=who.token_id), slot)


@router.get("/events/stream", response_class=StreamingResponse,
            summary="Follow every event of your projects live (Server-Sent Events)",
            description="Every event of the token's projects (or of `?project=`), in order of "
                        "time. Each message: `id:` an opaque position to resume after, `event:` "
                        "the kind, `data:` the event as GET /jobs/{id}/events returns it (with "
                        "its `job_id`). Starts after `?after=` or `Last-Event-ID` (default: "
                        "now); it does not end by itself.",
            responses={**_STREAM, **_errors(403, 422, 429)})
async def event_stream(
    who: Principal = Depends(principal), hub: StreamHub = Depends(streams),
    last_event_id: LastEventId = None,
    project: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    after: Annotated[str | None, Query(min_length=1, max_length=200,
                                       description="a position (`id:`) to start after")] = None,
) -> StreamingResponse:
    validate.texts(project=project)
    name, position = ("Last-Event-ID", last_event_id) if last_event_id is not None else (
        "after", after)
    if position is not None:
        try:
            parse_position(position)
        except ValueError:
            raise _bad(name, "not a position this stream sent") from None
    if project is not None and not who.allows(project):
        raise Problem(403, "forbidden", f"this token may not read project {project!r}")
    scope = (project,) if project is not None else who.scope
    slot = hub.acquire(who.id)
    return _respond(hub.feed_stream(scope, after=position, slot=slot, token=who.token_id),
                    slot)
