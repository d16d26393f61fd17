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
from ..core import validate
from ..records import Job

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = validate.MAX_KEY


def parse_key(value: str | None) -> str | None:
    """The key from the header, or ``InvalidIdempotencyKey`` (400 ``invalid_idempotency_key``)
    when it is malformed: the facade's own check, so every interface answers alike."""
    return validate.idempotency_key(value)


def submit(app: Tether, options: dict[str, Any], key: str | None) -> tuple[Job, bool]:
    """Submit through the facade: (job, created). The facade decides what a repeat is
    (``tether/submission.py``) and raises ``IdempotencyConflict`` for a key used with another
    configuration or priority."""
    return app.submit_with_status(idempotency_key=key, **options)
