"""Replays that notice change: what each journaled call asked, which version of each stage wrote
its checkpoint, and what a replay does when it finds either changed.

A job replays from the top whenever it resumes, and its code may have been deployed again in
between. A ``done`` call key whose fingerprint differs from the one recorded, or a checkpoint
written by another stage version, is a *change*. What happens then is the first of: the
operator's decision given when the job was resumed (``app.resume(id, on_change=...)``; it
holds until the replay waits, pauses or ends), the call's or stage's own ``on_change``, the job
type's ``on_change``, ``"pause"``:

* ``pause``  the job pauses with ``journal_mismatch`` (its event names the key or stage and
  what differs); nothing is paid and nothing is returned.
* ``reuse``  the recorded answer (or checkpoint) is returned; a ``call_reused`` /
  ``stage_reused`` event records the change, and the new fingerprint (or version) is recorded
  so later replays match.
* ``repay``  the call is paid again (a new reservation and its own ledger row); the old answer
  stays findable in a ``call_repaid`` event. For a stage: it runs again (``stage_rerun``); its
  calls are re-paid only if they changed too.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NoReturn

from ..core.serialize import dumps
from ..core.usage import Estimate
from ..errors import JournalMismatch
from .host import RunningJob

RECIPE = 1
"""The version of the fingerprint's recipe: fingerprints of another recipe are not compared."""


def call_fingerprint(provider: str, model: str, estimate: Estimate,
                     request_hash: str | None) -> str:
    """What a call asked, as canonical JSON (sorted keys, no spaces: the same text in every
    process and Python version): the recipe version, provider and model, and either the
    request's sha256 (``request_hash``: the call cache's key, which covers provider and model
    too) or, without a request, what its estimate was built from (``max_output_tokens``,
    ``input_tokens``, and the sha256 of ``input_text``)."""
    parts: dict[str, Any] = {"v": RECIPE, "provider": provider, "model": model}
    if request_hash is not None:
        parts["request"] = request_hash
    else:
        text = estimate.input_text
        parts["estimate"] = {
            "max_output_tokens": estimate.max_output_tokens,
            "input_tokens": estimate.input_tokens,
            "input_sha256": (None if text is None
                             else hashlib.sha256(text.encode("utf-8")).hexdigest())}
    return dumps(parts, what="call fingerprint")


def differences(recorded: str | None, new: str) -> dict[str, list[Any]]:
    """What differs between a recorded fingerprint and a new one, component by component
    (``{"model": ["sim-small", "sim-large"]}``; ``estimate`` parts as ``estimate.<name>``).
    Empty when they match, or when the recorded one cannot be compared: written before
    fingerprints existed (None), or by another recipe."""
    if recorded is None or recorded == new:
        return {}
    old, now = _parts(recorded), _parts(new)
    if old.get("v") != now.get("v"):
        return {}
    out: dict[str, list[Any]] = {}
    for name in sorted(set(old) | set(now)):
        a, b = old.get(name), now.get(name)
        if isinstance(a, dict) and isinstance(b, dict):
            out.update({f"{name}.{k}": [a.get(k), b.get(k)]
                        for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)})
        elif a != b:
            out[name] = [a, b]
    return out


def _parts(fingerprint: str) -> dict[str, Any]:
    try:
        value = json.loads(fingerprint)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def decide(ctx: RunningJob, policy: str | None) -> str:
    """``reuse`` or ``repay`` for a change this replay found: the operator's decision, else
    ``policy`` (the call's or stage's), else the job type's; ``pause`` is returned as is."""
    return ctx.replay_decision() or policy or ctx.on_change


def mismatch(ctx: RunningJob, *, key: str | None = None, stage: str | None,
             differs: dict[str, list[Any]]) -> NoReturn:
    """Stop the replay: the job pauses with ``journal_mismatch``, naming what changed."""
    shown = "; ".join(f"{name} {a} -> {b}" for name, (a, b) in differs.items())
    what = f"call {key!r}" if key is not None else f"stage {stage!r}"
    where = f" in stage {stage!r}" if key is not None and stage is not None else ""
    details: dict[str, Any] = {"stage": stage, "differs": differs}
    if key is not None:
        details["key"] = key
    ctx.lease.raise_signal(JournalMismatch(
        f"{what}{where} changed since it was recorded ({shown}); resume with on_change "
        "'reuse' or 'repay'", **details))
