"""Idempotent submission for the REST API (``Idempotency-Key``) and the MCP tools.

The key is scoped to the job's project and enforced by the store's unique (project, key) index,
so concurrent requests with one key create exactly one job: the first is answered 201, every
other one 200 with the same job. "Same body" means the same resolved configuration (type,
payload, project, queue, max_attempts, budget: the job's ``input_config_hash``) and the same
priority; anything else under a used key is a 422 ``idempotency_conflict``. ``run_after`` is a
scheduling hint and not part of a job's identity.
"""

from __future__ import annotations

from typing import Any

from ..app import Tether
from ..records import Job
from .problems import Problem

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 200


def parse_key(value: str | None) -> str | None:
    """The key from the header, or a 400 ``invalid_idempotency_key`` when it is malformed:
    1 to 200 visible ASCII characters (no spaces, no control characters)."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_KEY_LENGTH or not all("!" <= ch <= "~" for ch in value):
        raise Problem(400, "invalid_idempotency_key",
                      f"{HEADER} must be 1 to {MAX_KEY_LENGTH} visible ASCII characters")
    return value


def submit(app: Tether, options: dict[str, Any], key: str | None) -> tuple[Job, bool]:
    """Submit through the facade: (job, created). The facade decides what a repeat is
    (``tether/submission.py``) and raises ``IdempotencyConflict`` for a key used with another
    configuration or priority."""
    return app.submit_with_status(idempotency_key=key, **options)
