"""Stages: a finished stage's output is checkpointed; a resumed job skips it.

The output is written to the app's blob store first and durable there before the manifest row
(``checkpoints``) commits under the lease, so a crash in between leaves the stage unfinished and
resumable, never half-committed.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from ..core.serialize import dumps_back, loads
from .host import RunningJob


def run_stage(ctx: RunningJob, name: str, fn: Callable[[], Any]) -> Any:
    """Return the checkpointed output of stage ``name``, running ``fn`` only if it has none.
    Traced as one span (``tracing.py``), a reused stage too (``tether.checkpoint=hit``)."""
    with ctx.trace.stage(ctx.id, name) as traced:
        ctx.check()
        store = ctx.store
        position = ctx.next_position()
        done = store.get_checkpoint(ctx.id, name)
        traced.reused(done is not None)
        if done is not None:
            ctx.stats["stages_reused"] += 1
            return loads(ctx.app.blobs.get(done.blob))
        ctx.set_stage(name)
        value = fn()
        ctx.check()
        text, output = dumps_back(value, what=f"output of stage {name!r}")
        data = text.encode()
        sha = ctx.app.blobs.put(data)
        store.save_checkpoint(ctx.id, ctx.attempt, stage=name, position=position, blob=sha,
                              size=len(data))
        ctx.stats["stages_run"] += 1
        return output
