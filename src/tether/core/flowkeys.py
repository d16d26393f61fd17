"""Singleton and debounce keys: what a job type declares, and the key a submit resolves to.

A job type (or one submit) may name a *flow key*, the identity a submission shares with
others of its type and project:

* ``singleton``: at most one job per key is live (not succeeded, failed or cancelled). A
  submit while one is live creates nothing and returns that job, as an idempotent repeat
  does (``created`` is False), whatever its payload: the key, not the configuration, names
  the job.
* ``debounce``: at most one job per key is *pending* (queued and never claimed). The first
  submit of a burst is held ``debounce_s`` seconds (its ``run_after``); each later submit
  while it is still pending replaces its payload (and configuration hash) instead of adding a
  job, and returns it. Its start is not pushed back, so a steady stream of submits delays the
  work by at most the window. Once claimed, the next submit starts a new pending job.

The database enforces both (a unique partial index per mode, ``store/jobs.py``), so
concurrent submitters on many machines agree. Pure: no store, no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal
from collections.abc import Callable

from ..errors import InvalidArgument

FlowMode = Literal["singleton", "debounce"]
SINGLETON: FlowMode = "singleton"
DEBOUNCE: FlowMode = "debounce"
MAX_KEY = 200
MAX_WINDOW_S = 86400.0 * 30

TYPE_WIDE = ""
"""The key of a type declared without ``flow_key``: one job per type and project."""

KeyRule = str | Callable[[Any], Any] | None
"""How a type finds a job's key: a payload field name, a function of the payload, or None
(the type as a whole)."""


@dataclass(frozen=True)
class FlowRule:
    """A job type's declaration: ``mode`` (``singleton`` or ``debounce``), how its key is
    found (``key``), and the debounce window in seconds."""

    mode: FlowMode
    key: KeyRule = None
    window_s: float = 0.0


@dataclass(frozen=True)
class FlowKey:
    """What one submit resolved to: stored on the job as ``flow_mode`` and ``flow_key``."""

    mode: FlowMode
    key: str
    window_s: float = 0.0


def window(value: Any) -> float:
    """A debounce window: seconds, more than 0 and at most 30 days."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not 0 < value <= MAX_WINDOW_S):
        raise InvalidArgument(f"debounce_s must be a number of seconds above 0 and at most "
                              f"{MAX_WINDOW_S:.0f}, got {value!r:.60}", argument="debounce_s")
    return float(value)


def key_text(value: Any) -> str:
    """A key value: a string (or an integer, as its decimal text) of at most 200 printable
    characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or len(value) > MAX_KEY or not value.isprintable():
        raise InvalidArgument(f"flow_key must be a string of at most {MAX_KEY} printable "
                              f"characters, got {value!r:.60}", argument="flow_key")
    return value


def rule(singleton: bool, debounce_s: float | None, key: KeyRule) -> FlowRule | None:
    """A type's declaration from ``job(singleton=, debounce_s=, flow_key=)``; None for neither.
    ``InvalidArgument`` for both, or a key with neither."""
    if singleton and debounce_s is not None:
        raise InvalidArgument("a job type is singleton or debounced, not both",
                              argument="debounce_s")
    if key is not None and not (isinstance(key, str) or callable(key)):
        raise InvalidArgument("flow_key must be a payload field name or a function of the "
                              "payload", argument="flow_key")
    if singleton:
        return FlowRule(SINGLETON, key)
    if debounce_s is not None:
        return FlowRule(DEBOUNCE, key, window(debounce_s))
    if key is not None:
        raise InvalidArgument("flow_key needs singleton=True or debounce_s=",
                              argument="flow_key")
    return None


def resolve(declared: FlowRule | None, payload: Any, *, key: Any = None,
            singleton: bool | None = None, debounce_s: float | None = None) -> FlowKey | None:
    """The flow key of one submit: the type's rule, overridden by the submit's own
    ``singleton``/``debounce_s`` (``singleton=False`` turns the type's singleton off) and
    ``key`` (the key's value itself)."""
    mode: FlowMode | None = declared.mode if declared else None
    window_s = declared.window_s if declared else 0.0
    if singleton is not None and debounce_s is not None and singleton:
        raise InvalidArgument("a submit is singleton or debounced, not both",
                              argument="debounce_s")
    if singleton is not None:
        if not isinstance(singleton, bool):
            raise InvalidArgument(f"singleton must be true or false, got {singleton!r:.60}",
                                  argument="singleton")
        mode = SINGLETON if singleton else (None if mode == SINGLETON else mode)
    if debounce_s is not None:
        mode, window_s = DEBOUNCE, window(debounce_s)
    if mode is None:
        if key is not None:
            raise InvalidArgument("flow_key needs singleton or debounce_s (here or on the job "
                                  "type)", argument="flow_key")
        return None
    if key is None:
        key = _derived(declared.key if declared else None, payload)
    return FlowKey(mode, key_text(key), window_s)


def _derived(rule_key: KeyRule, payload: Any) -> Any:
    if rule_key is None:
        return TYPE_WIDE
    if callable(rule_key):
        try:
            return rule_key(payload)
        except Exception as exc:
            raise InvalidArgument(f"this job type's flow key could not be read from the "
                                  f"payload: {type(exc).__name__}: {exc}",
                                  argument="flow_key") from exc
    if not isinstance(payload, dict) or rule_key not in payload:
        raise InvalidArgument(f"the payload has no field {rule_key!r}, which this job type's "
                              "flow key is read from", argument="flow_key")
    return payload[rule_key]
