"""Callback URLs over HTTP: ``/callbacks/{job_id}/{signal}/{token}`` (public: the token is the
credential) and ``/api/v1/jobs/{id}/callbacks`` (making and listing them, with a bearer token).

``POST`` to a callback URL delivers its body (any JSON; empty means null) as the signal, exactly
as ``POST /api/v1/jobs/{id}/signals/{name}`` would, and spends the token; a form post (the
confirmation page's) sends ``{"approved": true|false, "value": ...}`` like the dashboard.
``GET`` shows the question and that form and spends nothing, so a mail scanner that fetches
the link answers nothing. Refusals are problem documents (an HTML page for a form post):
404 ``callback_not_found``, 410 ``callback_used`` or ``callback_expired``, 409
``callback_closed``. The token never reaches a log or a problem's ``instance`` (``redact.py``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Body, Depends, Path, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from ..app import Tether
from ..core import callbacks as cb
from ..errors import CallbackRefused
from ..wire.callbacks import CallbackAnswer, CallbackList, CallbackOut, CallbackRequest
from ..wire.problems import STATUS_BY_CODE, Problem
from . import callback_page
from .auth import Principal, principal
from . import openapi as callback_openapi
from .openapi import problem_responses as _errors
from .routes_jobs import JobId, tether
from .routes_signals import SignalName

router = APIRouter(prefix="/jobs", tags=["jobs"])
public = APIRouter(prefix="/callbacks", tags=["callbacks"])

Token = Annotated[str, Path(max_length=200, description="the callback's token (secret)")]
FORM = "application/x-www-form-urlencoded"


@router.post("/{job_id}/callbacks", status_code=201, response_model=CallbackOut,
             responses=_errors(404, 409), summary="Make a callback URL for a waiting job",
             description="A single-use URL that answers the signal wait the job is blocked on "
                         "without an API token (POST its value there). `url` is in this answer "
                         "only: the token is stored hashed. It is made under TETHER_PUBLIC_URL, "
                         "else the address this request came to. 409 `invalid_transition` "
                         "unless the job waits for a signal.")
def make_callback(request: Request, job_id: JobId, who: Principal = Depends(principal),
                  app: Tether = Depends(tether),
                  body: Annotated[CallbackRequest | None, Body()] = None) -> CallbackOut:
    made = app.issue_callback(job_id, expires_in=body.expires_in_s if body else None,
                              issued_by=f"token:{who.id}", base_url=str(request.base_url),
                              projects=who.scope)
    return CallbackOut.of(made)


@router.get("/{job_id}/callbacks", response_model=CallbackList, responses=_errors(404),
            summary="The job's callback URLs: expiry and state (unused, used, expired)")
def list_callbacks(job_id: JobId, who: Principal = Depends(principal),
                   app: Tether = Depends(tether)) -> CallbackList:
    return CallbackList(items=[CallbackOut.of(c)
                               for c in app.callbacks(job_id, projects=who.scope)])


_BODY = {"requestBody": {"required": False, "content": {
    "application/json": {"schema": {"description": "the signal's value: any JSON"}},
    FORM: {"schema": {"type": "object", "properties": {
        "approved": {"type": "string", "enum": ["true", "false"]},
        "value": {"type": "string"}}}}}}}
_PAGE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/html": callback_openapi.HTML}, "description": "the page"}}


@public.post("/{job_id}/{signal}/{token}", response_model=CallbackAnswer,
             responses={**_PAGE, **_errors(400, 404, 409, 410, 413)}, openapi_extra=_BODY,
             summary="Answer a waiting job through its callback URL (no API token)",
             description="The body is the signal's value: any JSON, empty for null. A form "
                         "post sends `{\"approved\": bool, \"value\": ...}`. Once per URL.")
async def answer(request: Request, job_id: JobId, signal: SignalName, token: Token,
                 app: Tether = Depends(tether)) -> Any:
    form = request.headers.get("content-type", "").split(";")[0].strip().lower() == FORM
    value = _value(await request.body(), form)
    try:
        job = await run_in_threadpool(app.answer_callback, job_id, signal, token, value)
    except CallbackRefused as exc:
        if not form:
            raise
        return _refused_page(exc)
    if form:
        return HTMLResponse(callback_page.outcome("Thank you", f"Your answer was sent to "
                                                  f"job {job_id}."), headers=callback_page.HEADERS)
    return CallbackAnswer(job_id=job.id, signal=signal, callback=str(cb.token_id(token)),
                          state=job.state)


@public.get("/{job_id}/{signal}/{token}", response_class=HTMLResponse,
            responses=_errors(404, 409, 410),
            summary="The confirmation page of a callback URL (spends nothing)")
def confirm(job_id: JobId, signal: SignalName, token: Token,
            app: Tether = Depends(tether)) -> Response:
    try:
        made, wait = app.check_callback(job_id, signal, token)
    except CallbackRefused as exc:
        return _refused_page(exc)
    return HTMLResponse(callback_page.confirm(job_id=job_id, signal=signal, prompt=wait.prompt,
                                              schema=wait.schema, expires_at=made.expires_at),
                        headers=callback_page.HEADERS)


def _value(body: bytes, form: bool) -> Any:
    if form:
        fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        text = fields.get("value", [""])[0].strip()
        return {"approved": fields.get("approved", [""])[0] == "true",
                "value": _json_or_text(text) if text else None}
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise Problem(400, "bad_request", "the body of a callback is its JSON value (or "
                                          "empty for null)") from None


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


_TITLES = {"callback_used": "Already answered", "callback_expired": "This link has expired",
           "callback_closed": "No longer waiting", "callback_not_found": "Unknown link"}


def _refused_page(exc: CallbackRefused) -> HTMLResponse:
    return HTMLResponse(callback_page.outcome(_TITLES.get(exc.code, "Refused"),
                                              f"{exc.message} ({exc.code})"),
                        status_code=STATUS_BY_CODE.get(exc.code, 403),
                        headers=callback_page.HEADERS)
