"""The facade's callback URLs: make one for a job's signal wait, list them, answer with one.

A callback URL answers one signal wait of one job without an API token (docs/alerts.md,
"Callback URLs"). The job's own ``ctx.wait_for_signal(callback=)`` makes one as it parks;
anyone allowed to see the job may make another (``issue_callback``: REST, MCP, CLI, the
dashboard). Its token is stored hashed, so its URL is in the answer of the call that made it
and nowhere else; later reads show its id, expiry and state. ``answer_callback`` is what the
public route ``POST /callbacks/{job_id}/{signal}/{token}`` calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from ..core import callbacks as cb
from ..core import validate
from ..core.serialize import dumps, loads
from ..errors import CallbackClosed, JobStateError
from ..records import Job, Wait
from .host import FacadeHost


class CallbacksPart(FacadeHost):
    """``issue_callback``, ``callbacks``, ``check_callback`` and ``answer_callback``."""

    def issue_callback(self, job_id: int, *, expires_in: float | timedelta | None = None,
                       issued_by: str = "operator", base_url: str | None = None,
                       projects: Iterable[str] | None = None) -> cb.Callback:
        """A new callback URL for the signal wait the job is blocked on, expiring after
        ``expires_in`` (default seven days). Its ``url`` holds the token and is shown only
        here. It is made under ``public_url``, else ``base_url`` (the address a request came
        to: what the API and the dashboard pass). ``JobStateError`` unless the job has an open
        signal wait; ``ConfigurationError`` with neither address."""
        job_id = validate.job_id(job_id)
        seconds = cb.expiry_seconds(expires_in)
        made = cb.new_token()
        base = cb.base(self.public_url or base_url)  # refused before anything is stored
        issued = self.store.issue_callback(job_id, id=made.id, token_hash=made.digest,
                                           expires_in=seconds, issued_by=issued_by,
                                           projects=projects)
        if issued is None:  # the store skips only a job's own (``attempt=``) callback
            raise JobStateError(f"job {job_id} took no callback", job_id=job_id)
        return replace(issued, url=cb.url(base, job_id, issued.signal, made.raw))

    def callbacks(self, job_id: int, *, key: str | None = None,
                  projects: Iterable[str] | None = None) -> list[cb.Callback]:
        """The job's callbacks (of its wait ``key`` only, if given), oldest first: id, wait,
        signal, who made it, expiry and state (``unused``, ``used``, ``expired``). Never a
        URL: only the hash of its token is kept."""
        return self.store.callbacks(validate.job_id(job_id), key=key, projects=projects)

    def check_callback(self, job_id: int, signal: str, token: str) -> tuple[cb.Callback, Wait]:
        """The callback ``token`` and the wait it answers, if it would be honoured now (a
        confirmation page shows the wait's prompt); its refusal raised otherwise. Spends
        nothing."""
        job_id = validate.job_id(job_id)
        made = self.store.check_callback(job_id, validate.signal_name(signal), token)
        wait = self.store.get_wait(job_id, made.key)
        if wait is None:  # deleted between the two reads
            raise CallbackClosed(f"job {job_id} no longer waits for this answer", job_id=job_id)
        return made, wait

    def answer_callback(self, job_id: int, signal: str, token: str, value: Any = None) -> Job:
        """Deliver ``value`` to ``job_id``'s wait for ``signal`` with a callback token, as
        ``signal`` would, and spend the token. Refused with a ``CallbackRefused``
        (``callback_not_found``, ``callback_used``, ``callback_expired``,
        ``callback_closed``); nothing is written then."""
        signal = validate.signal_name(signal)
        value = loads(dumps(value, what="signal value"))
        return self.store.answer_callback(validate.job_id(job_id), signal, token, value)
