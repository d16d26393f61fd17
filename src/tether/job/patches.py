"""Patches: one job function serving jobs whose history older code recorded, and new ones.

``ctx.patched(name)`` says whether this job takes the patched path at ``name``. The first
answer for a job and name is True unless an earlier attempt of the job recorded progress (a
journaled call, a checkpoint, a wait, or one a fork carried) and no answer for ``name``: that
history was made by code without the patch, which never asked, so the job keeps the old path.
A job that first runs code with the patch answers True, even past its first call, for no
attempt before it recorded anything.

The answer is recorded (a ``patched`` event, written under the lease) before it is returned,
and every later call, in this attempt or a later one, returns the recorded answer: a replay
takes the same path whatever ran before it, and a crash before the record leaves no path
taken on it. A job keeps its answer for its whole life, so once no job recorded before the
patch can still run, the old path (and the ``patched`` call) can be deleted.
"""

from __future__ import annotations

import threading

from ..core import validate
from .host import RunningJob


class Patches:
    """One attempt's answers, read from the store at its first ``patched`` call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, bool] | None = None
        self._progressed = False

    def patched(self, ctx: RunningJob, name: str) -> bool:
        validate.name(name, "patch")
        with self._lock:
            if self._answers is None:
                ctx.check()
                self._answers, self._progressed = ctx.store.patches(ctx.id, ctx.attempt)
            answer = self._answers.get(name)
            if answer is None:
                answer = not self._progressed
                ctx.check()
                ctx.store.append_event(ctx.id, "patched", {"name": name, "patched": answer},
                                       attempt=ctx.attempt)
                self._answers[name] = answer
            return answer
