"""Stages: a finished stage's output is checkpointed; a resumed job skips it.

The output is written to the app's blob store first and durable there before the manifest row
(``checkpoints``) commits under the lease, so a crash in between leaves the stage unfinished and
resumable, never half-committed. A checkpoint written by another ``version`` of the stage is a
change (``replay.py``): the replay pauses, reuses the checkpoint, or runs the stage again.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from ..core.serialize import dumps_back, loads
from ..core.validate import on_change as checked_policy
from ..errors import InvalidArgument
from .host import RunningJob
from .replay import decide, mismatch


def run_stage(ctx: RunningJob, name: str, fn: Callable[[], Any], *,
              version: str | None = None, on_change: str | None = None) -> Any:
    """Return the checkpointed output of stage ``name``, running ``fn`` only if it has none
    (or has one of another ``version`` that is not reused).
    Traced as one span (``tracing.py``), a reused stage too (``tether.checkpoint=hit``)."""
    if version is not None and not isinstance(version, str):
        raise InvalidArgument(f"stage {name!r}: version must be a string, not {version!r}")
    checked_policy(on_change)
    with ctx.trace.stage(ctx.id, name) as traced:
        ctx.check()
        store = ctx.store
        position = ctx.next_position()
        done = store.get_checkpoint(ctx.id, name)
        if done is not None and done.version != version:
            decision = decide(ctx, on_change)
            differs = {"version": [done.version, version]}
            if decision == "pause":
                mismatch(ctx, stage=name, differs=differs)
            store.change_stage(ctx.id, ctx.attempt, stage=name, decision=decision,
                               version=version, differs=differs)
            if decision == "repay":
                done = None
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
                              size=len(data), version=version)
        ctx.stats["stages_run"] += 1
        return output
