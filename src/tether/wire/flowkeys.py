"""Singleton and debounce on the wire: the submit options REST and MCP share, and how a job
shows its key (``core/flowkeys.py``; docs/flow-control.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..core.flowkeys import MAX_KEY, MAX_WINDOW_S, FlowMode
from .numbers import JsonNumber

SINGLETON_HELP = ("at most one live job per flow_key: a submit while one is live returns it "
                  "and adds none; absent: the job type's declaration")
DEBOUNCE_HELP = ("hold the job this many seconds; a submit of the same flow_key while it is "
                 "still pending replaces its payload and returns it; absent: the job type's")
FLOW_KEY_HELP = ("the key singleton or debounce count jobs by, within the type and project; "
                 "absent: what the job type reads from the payload")
MODE_HELP = ("singleton: one live job per flow_key; debounce: one pending job per flow_key, "
             "later submits replacing its payload; null: neither")
KEY_HELP = "the key flow_mode counts by, within the type and project (empty: the whole type)"

Window = Annotated[float | None, Field(gt=0, le=MAX_WINDOW_S, description=DEBOUNCE_HELP),
                   JsonNumber]
Key = Annotated[str | None, Field(max_length=MAX_KEY, description=FLOW_KEY_HELP)]
Mode = FlowMode

