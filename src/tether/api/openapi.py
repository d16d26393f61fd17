"""The OpenAPI document: error responses are documented as ``application/problem+json``.

Routes name their specific error statuses with ``problem_responses(...)``; ``finish`` then adds
what every ``/api/v1`` operation may answer (401, 422, and 413 where a body is read), replaces
FastAPI's own validation-error schema with ``ProblemOut`` and moves every 4xx/5xx response to
the problem media type, so schema-driven clients (and schemathesis) see what the server sends.
"""

from __future__ import annotations

from typing import Any

from ..wire.problems import MEDIA_TYPE, TITLES
from ..wire.models import ProblemOut

PROBLEM_REF = {"$ref": "#/components/schemas/ProblemOut"}
HTML = {"schema": {"type": "string"}}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for FastAPI routes: each status answers a problem document."""
    return {status: {"model": ProblemOut, "description": TITLES.get(status, "Error")}
            for status in statuses}


def _problem(status: int) -> dict[str, Any]:
    return {"description": TITLES.get(status, "Error"),
            "content": {MEDIA_TYPE: {"schema": PROBLEM_REF}}}


def finish(schema: dict[str, Any], *, auth: bool) -> dict[str, Any]:
    """Rewrite the generated document in place (see the module docstring) and return it."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    for path, item in schema.get("paths", {}).items():
        for op in item.values():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            responses = op["responses"]
            if path.startswith("/api/v1"):
                if auth:
                    responses.setdefault("401", _problem(401))
                responses["422"] = _problem(422)
                if "requestBody" in op:
                    responses.setdefault("413", _problem(413))
            for status, response in list(responses.items()):
                if status[0] in "45":
                    response["content"] = {MEDIA_TYPE: {"schema": PROBLEM_REF}}
                    if path.startswith("/callbacks/") and status != "422":
                        response["content"]["text/html"] = HTML  # a person's page
    if auth:
        schema["components"].setdefault("securitySchemes", {})["bearer"] = {
            "type": "http", "scheme": "bearer",
            "description": "a token from `tether token create`"}
        for path, item in schema.get("paths", {}).items():
            if path.startswith("/api/v1") and not path.endswith("/healthz"):
                for op in item.values():
                    if isinstance(op, dict):
                        op["security"] = [{"bearer": []}]
    return schema
